package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/imdhq/imd/core/domain/social"
	"github.com/imdhq/imd/ports"
)

var _ ports.GroupOwners = (*Directory)(nil)

// GroupOwner reads t_groups.owner_id.
func (d *Directory) GroupOwner(ctx context.Context, tenant string, groupID int64) (int64, error) {
	t, err := d.cluster.tenant(tenant)
	if err != nil {
		return 0, err
	}
	owner, err := t.q.GroupOwner(ctx, groupID)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("owner of group %d: %w", groupID, social.ErrNotFound)
	}
	if err != nil {
		return 0, fmt.Errorf("owner of group %d: %w", groupID, err)
	}
	return owner, nil
}
