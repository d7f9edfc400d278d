package memory

import (
	"context"
	"fmt"

	"github.com/imdhq/imd/core/domain/social"
	"github.com/imdhq/imd/ports"
)

var _ ports.GroupOwners = (*Directory)(nil)

// GroupOwner returns the owner the group was created with.
func (d *Directory) GroupOwner(_ context.Context, tenant string, groupID int64) (int64, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	g, ok := d.graph(tenant).groups[groupID]
	if !ok {
		return 0, fmt.Errorf("owner of group %d: %w", groupID, social.ErrNotFound)
	}
	return g.Owner, nil
}
