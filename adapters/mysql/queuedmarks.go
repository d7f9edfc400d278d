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

type markReq struct {
	key  dedupKey
	done chan error // buffered
}

// queuedMarker flags the dedup records of one tenant. Like the group-commit writer it batches
// opportunistically: a lone mark is written at once, and marks that arrive while an UPDATE runs
// go together in the next one, so a mark per message costs one statement per batch, not per
// message.
type queuedMarker struct {
	t    *tenantDB
	reqs chan *markReq // closed by MessageStore.Close
}

// MarkQueued flags the record as queued and waits for the UPDATE that carries it.
func (s *MessageStore) MarkQueued(ctx context.Context, tenant, topic string, from int64, clientMsgID string) error {
	t, err := s.cluster.tenant(tenant)
	if err != nil {
		return err
	}
	req := &markReq{key: dedupKey{topic: topic, from: from, clientMsgID: clientMsgID}, done: make(chan error, 1)}
	if err := submit(ctx, s, func() chan *markReq { return s.marker(tenant, t).reqs }, req); err != nil {
		return err
	}
	select {
	case err := <-req.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *MessageStore) marker(tenant string, t *tenantDB) *queuedMarker {
	s.writersMu.Lock()
	defer s.writersMu.Unlock()
	m, ok := s.markers[tenant]
	if !ok {
		m = &queuedMarker{t: t, reqs: make(chan *markReq, queuePerWriter)}
		s.markers[tenant] = m
		s.running.Go(m.run)
	}
	return m
}

// run writes batches of marks until reqs is closed and drained.
func (m *queuedMarker) run() {
	for r := range m.reqs {
		batch := []*markReq{r}
	more:
		for len(batch) < maxMarksPerUpdate {
			select {
			case r, ok := <-m.reqs:
				if !ok {
					break more
				}
				batch = append(batch, r)
			default:
				break more
			}
		}
		err := m.write(batch)
		for _, r := range batch {
			r.done <- err
		}
	}
}

func (m *queuedMarker) write(batch []*markReq) error {
	upd, err := queuedMarkBatch(batch)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), DefaultTxTimeout)
	defer cancel()
	if err := retryTransient(func() error { return upd.exec(ctx, m.t.db) }); err != nil {
		return fmt.Errorf("mark %d dedup records queued: %w", len(batch), err)
	}
	return nil
}

// queuedMarkBatch is the UPDATE that flags batch's records (sql/queries/dedup.sql).
func queuedMarkBatch(batch []*markReq) (rowBatch, error) {
	upd := rowBatch{sep: sepOr}
	for _, r := range batch {
		p := sqlcdb.MarkDedupQueuedParams{Topic: r.key.topic, FromUser: r.key.from, ClientMsgID: r.key.clientMsgID}
		if err := upd.add(func(q *sqlcdb.Queries) error { return q.MarkDedupQueued(context.Background(), p) }); err != nil {
			return rowBatch{}, err
		}
	}
	return upd, nil
}
