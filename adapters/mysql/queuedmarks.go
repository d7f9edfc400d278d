package mysql

import (
	"context"
	"fmt"

	"github.com/imdhq/imd/adapters/mysql/sqlcdb"
	"github.com/imdhq/imd/ports"
)

// Dedup record states: written 'stored' with the message, 'queued' once its deliver job was
// queued (see sql/queries/dedup.sql).
const (
	dedupStored = "stored"
	dedupQueued = "queued"
)

// maxMarksPerUpdate caps the records one UPDATE flags.
const maxMarksPerUpdate = 512

var _ ports.QueuedMarks = (*MessageStore)(nil)

// MarkQueued flags the record as queued and waits for the COMMIT of the transaction that
// carries it (marker).
func (s *MessageStore) MarkQueued(ctx context.Context, tenant, topic string, from int64, clientMsgID string) error {
	req := newMarkReq(dedupKey{topic: topic, from: from, clientMsgID: clientMsgID})
	if err := s.addMark(tenant, func(m *marker) { addMark(m, &m.queued, req) }); err != nil {
		return err
	}
	return req.wait(ctx)
}

// addMark hands a mark to the tenant's marker by add, unless the store is closed.
func (s *MessageStore) addMark(tenant string, add func(*marker)) error {
	t, err := s.cluster.tenant(tenant)
	if err != nil {
		return err
	}
	s.sending.RLock()
	defer s.sending.RUnlock()
	if s.closed {
		return ErrClosed
	}
	add(s.marker(tenant, t))
	return nil
}

func (s *MessageStore) marker(tenant string, t *tenantDB) *marker {
	s.writersMu.Lock()
	defer s.writersMu.Unlock()
	return s.markerLocked(tenant, t)
}

// markerLocked is marker with writersMu held.
func (s *MessageStore) markerLocked(tenant string, t *tenantDB) *marker {
	m, ok := s.markers[tenant]
	if !ok {
		m = newMarker(t, &s.stats)
		s.markers[tenant] = m
		s.marking.Go(m.run)
	}
	return m
}

// execQueuedMarks sends the UPDATE that flags batch's records (sql/queries/dedup.sql).
func execQueuedMarks(ctx context.Context, db sqlcdb.DBTX, batch []*markReq[dedupKey]) error {
	upd := rowBatch{sep: sepOr}
	for _, r := range batch {
		p := sqlcdb.MarkDedupQueuedParams{Topic: r.mark.topic, FromUser: r.mark.from, ClientMsgID: r.mark.clientMsgID}
		if err := upd.add(func(q *sqlcdb.Queries) error { return q.MarkDedupQueued(ctx, p) }); err != nil {
			return err
		}
	}
	if err := upd.exec(ctx, db); err != nil {
		return fmt.Errorf("mark %d dedup records queued: %w", len(batch), err)
	}
	return nil
}
