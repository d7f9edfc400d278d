package mysql

import (
	"context"
	"fmt"

	"github.com/imdhq/imd/adapters/mysql/sqlcdb"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/ports"
)

var _ ports.SeqHoles = (*MessageStore)(nil)

// HoleSuspects reads the route mirror for the topics of m that may hide a seq hole.
func (s *MessageStore) HoleSuspects(ctx context.Context, tenant string, m month.Month, after string, limit int) ([]string, error) {
	t, err := s.cluster.tenant(tenant)
	if err != nil {
		return nil, err
	}
	topics, err := t.q.HoleSuspects(ctx, sqlcdb.HoleSuspectsParams{ShardMonth: m.String(), After: after, Limit: int32(limit)})
	if err != nil {
		return nil, fmt.Errorf("hole suspects of %s: %w", m, err)
	}
	return topics, nil
}

// CloseHole goes through the month's group-commit writer like an append, so the tombstone
// meets the same catalog lock, overlap check and mirror upsert.
func (s *MessageStore) CloseHole(ctx context.Context, tenant string, tombstone message.Message) error {
	tombstone = normalize(tombstone)
	tombstone.Status, tombstone.ClientMsgID, tombstone.Content = message.StatusDeleted, "", nil
	_, err := s.write(ctx, tenant, &appendReq{ctx: ctx, msg: tombstone, hole: true, done: make(chan appendResp, 1)})
	return err
}
