package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"sync"

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

// queuedMarker flags the dedup records of one tenant. A mark rides the next group-commit
// transaction of any of the tenant's writers, as one UPDATE in it, and is answered after its
// COMMIT: a transaction of its own per batch cost MariaDB about as much again as the batch's
// COMMIT (issue 16). Only when no batch is coming or running does the marker write the waiting
// marks in a transaction of their own, at once, so an idle tenant's mark waits for nothing;
// marks that arrive meanwhile go together in the next one.
type queuedMarker struct {
	t     *tenantDB
	stats *writerStats
	wake  chan struct{} // buffered: something may be for the marker to write
	stop  chan struct{} // closed by MessageStore.Close once the writers have stopped

	mu      sync.Mutex
	waiting []*markReq // for the next transaction
	// alone: marks whose batch transaction failed; they do not ride another batch, whose
	// appends they could fail again.
	alone []*markReq
	// batches of the tenant's writers that are running or about to start: while there are
	// any, waiting marks will be taken by one, or woken for when the last one ends.
	batches int
}

// MarkQueued flags the record as queued and waits for the COMMIT of the transaction that
// carries it.
func (s *MessageStore) MarkQueued(ctx context.Context, tenant, topic string, from int64, clientMsgID string) error {
	t, err := s.cluster.tenant(tenant)
	if err != nil {
		return err
	}
	req := &markReq{key: dedupKey{topic: topic, from: from, clientMsgID: clientMsgID}, done: make(chan error, 1)}
	s.sending.RLock()
	if s.closed {
		s.sending.RUnlock()
		return ErrClosed
	}
	s.marker(tenant, t).add(req)
	s.sending.RUnlock()
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
	return s.markerLocked(tenant, t)
}

// markerLocked is marker with writersMu held.
func (s *MessageStore) markerLocked(tenant string, t *tenantDB) *queuedMarker {
	m, ok := s.markers[tenant]
	if !ok {
		m = &queuedMarker{t: t, stats: &s.stats, wake: make(chan struct{}, 1), stop: make(chan struct{})}
		s.markers[tenant] = m
		s.marking.Go(m.run)
	}
	return m
}

func (m *queuedMarker) add(r *markReq) {
	m.mu.Lock()
	m.waiting = append(m.waiting, r)
	idle := m.batches == 0
	m.mu.Unlock()
	if idle {
		m.signal()
	}
}

func (m *queuedMarker) signal() {
	select {
	case m.wake <- struct{}{}:
	default: // already woken
	}
}

// batchComing counts a batch a writer is about to collect; batchEnded undoes it once the batch
// was written or dropped.
func (m *queuedMarker) batchComing() {
	m.mu.Lock()
	m.batches++
	m.mu.Unlock()
}

func (m *queuedMarker) batchEnded() {
	m.mu.Lock()
	m.batches--
	idle := m.batches == 0 && len(m.waiting) > 0
	m.mu.Unlock()
	if idle {
		m.signal()
	}
}

// carry writes the waiting marks in the batch transaction tx, before the batch reads its
// dedup records, so a resend in the same batch sees its mark. The caller settles them once tx
// has ended.
func (m *queuedMarker) carry(ctx context.Context, tx *sql.Tx) ([]*markReq, error) {
	m.mu.Lock()
	batch := takeMarks(&m.waiting, maxMarksPerUpdate)
	m.mu.Unlock()
	if len(batch) == 0 {
		return nil, nil
	}
	return batch, execMarks(ctx, tx, batch)
}

// settle answers the marks a batch transaction carried once it committed; if it failed, they
// are written again alone: a mark is answered only after a COMMIT that includes it.
func (m *queuedMarker) settle(batch []*markReq, err error) {
	if len(batch) == 0 {
		return
	}
	if err == nil {
		answerMarks(batch, nil)
		return
	}
	m.mu.Lock()
	m.alone = append(m.alone, batch...)
	m.mu.Unlock()
	m.signal()
}

// run writes marks alone until stop is closed, then everything still waiting.
func (m *queuedMarker) run() {
	for {
		draining := false
		select {
		case <-m.wake:
		case <-m.stop:
			draining = true
		}
		for batch := m.next(draining); len(batch) > 0; batch = m.next(draining) {
			answerMarks(batch, m.write(batch))
		}
		if draining {
			return
		}
	}
}

// next takes what the marker writes in its next transaction: marks of failed batches, and
// the waiting ones when no batch will take them (or the writers have stopped).
func (m *queuedMarker) next(draining bool) []*markReq {
	m.mu.Lock()
	defer m.mu.Unlock()
	batch := takeMarks(&m.alone, maxMarksPerUpdate)
	if draining || m.batches == 0 {
		batch = append(batch, takeMarks(&m.waiting, maxMarksPerUpdate-len(batch))...)
	}
	return batch
}

func (m *queuedMarker) write(batch []*markReq) error {
	ctx, cancel := context.WithTimeout(context.Background(), DefaultTxTimeout)
	defer cancel()
	if err := retryTransient(func() error { return execMarks(ctx, m.t.db, batch) }); err != nil {
		return err
	}
	m.stats.markTransactions.Add(1)
	return nil
}

// takeMarks removes and returns up to n marks from the front of list.
func takeMarks(list *[]*markReq, n int) []*markReq {
	k := min(n, len(*list))
	if k == 0 {
		return nil
	}
	batch := (*list)[:k:k]
	*list = (*list)[k:]
	return batch
}

func answerMarks(batch []*markReq, err error) {
	for _, r := range batch {
		r.done <- err
	}
}

// execMarks sends the UPDATE that flags batch's records (sql/queries/dedup.sql).
func execMarks(ctx context.Context, db sqlcdb.DBTX, batch []*markReq) error {
	upd := rowBatch{sep: sepOr}
	for _, r := range batch {
		p := sqlcdb.MarkDedupQueuedParams{Topic: r.key.topic, FromUser: r.key.from, ClientMsgID: r.key.clientMsgID}
		if err := upd.add(func(q *sqlcdb.Queries) error { return q.MarkDedupQueued(ctx, p) }); err != nil {
			return err
		}
	}
	if err := upd.exec(ctx, db); err != nil {
		return fmt.Errorf("mark %d dedup records queued: %w", len(batch), err)
	}
	return nil
}
