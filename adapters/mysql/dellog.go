package mysql

import (
	"context"
	"fmt"

	"github.com/imdhq/imd/adapters/mysql/sqlcdb"
	"github.com/imdhq/imd/ports"
)

// DeleteLog implements ports.DeleteLog over im_dellog; the month-table pages join it (seed 000 §6.2).
type DeleteLog struct {
	cluster *Cluster
}

var _ ports.DeleteLog = (*DeleteLog)(nil)

// NewDeleteLog returns the delete log over the provisioned tenants of c.
func NewDeleteLog(c *Cluster) *DeleteLog { return &DeleteLog{cluster: c} }

// HideRange records [low, hi) for user. Overlapping ranges are kept as they come: the page
// query drops a message matched by any of them, so overlaps cost a row, never a duplicate.
func (l *DeleteLog) HideRange(ctx context.Context, tenant, topicName string, user, low, hi int64) error {
	t, err := l.cluster.tenant(tenant)
	if err != nil {
		return err
	}
	if user <= 0 || low < 1 || hi <= low {
		return fmt.Errorf("hide %s [%d, %d) for %d: invalid range or user", topicName, low, hi, user)
	}
	err = t.q.InsertDellog(ctx, sqlcdb.InsertDellogParams{Topic: topicName, Deletedfor: user, Low: low, Hi: hi})
	if err != nil {
		return fmt.Errorf("hide %s [%d, %d) for %d: %w", topicName, low, hi, user, err)
	}
	return nil
}
