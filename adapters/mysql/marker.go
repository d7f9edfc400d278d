package mysql

import (
	"context"
	"database/sql"
	"sync"

	"github.com/imdhq/imd/adapters/mysql/sqlcdb"
)

// markReq is one caller's mark of kind M: a dedup record's queued flag or a member's delivered
// watermark. It is answered once a COMMIT that includes it has ended.
type markReq[M any] struct {
	mark M
	done chan error // buffered
}

func newMarkReq[M any](mark M) *markReq[M] {
	return &markReq[M]{mark: mark, done: make(chan error, 1)}
}

// wait returns the mark's outcome; ctx bounds the wait, not the write.
func (r *markReq[M]) wait(ctx context.Context) error {
	select {
	case err := <-r.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func answerMarks[M any](batch []*markReq[M], err error) {
	for _, r := range batch {
		r.done <- err
	}
}

// markQueue is the marks of one kind that wait for a transaction: waiting for the next batch
// transaction (or the marker's own when none comes), alone those a failed batch carried, which
// do not ride another batch, whose appends they could fail again. A marker's mutex guards it.
type markQueue[M any] struct {
	waiting, alone []*markReq[M]
	// limit is the marks of one UPDATE.
	limit int
	// exec sends the UPDATE of a batch of marks on db.
	exec func(ctx context.Context, db sqlcdb.DBTX, batch []*markReq[M]) error
}

// take removes up to limit marks: the failed batches' first, then, with waiting, those that
// wait.
func (q *markQueue[M]) take(waiting bool) []*markReq[M] {
	batch := takeMarks(&q.alone, q.limit)
	if waiting {
		batch = append(batch, takeMarks(&q.waiting, q.limit-len(batch))...)
	}
	return batch
}

// takeMarks removes and returns up to n marks from the front of list.
func takeMarks[M any](list *[]*markReq[M], n int) []*markReq[M] {
	k := min(n, len(*list))
	if k == 0 {
		return nil
	}
	batch := (*list)[:k:k]
	*list = (*list)[k:]
	return batch
}

// marker writes the marks of one tenant: the queued flags of dedup records (DESIGN §4 step 6)
// and the delivered watermarks of member rows (DESIGN §13, "Read receipts"). A mark rides the
// next group-commit transaction of any of the tenant's writers, as one UPDATE per kind in it,
// and is answered after its COMMIT: a transaction of its own cost MariaDB about as much again
// as the batch's COMMIT (issue 16) and, for the delivered marks of W1, a log flush per ~11
// acks (issue 30, BENCHMARKS changes 40 and 41). Only when no batch is coming or running does
// the marker write the waiting marks in a statement of their own, at once, so an idle tenant's
// mark waits for nothing; marks that arrive meanwhile go together in the next one.
type marker struct {
	t     *tenantDB
	stats *writerStats
	wake  chan struct{} // buffered: something may be for the marker to write
	stop  chan struct{} // closed by MessageStore.Close once the writers have stopped

	mu        sync.Mutex
	queued    markQueue[dedupKey]
	delivered markQueue[deliveredMark]
	// batches of the tenant's writers that are running or about to start: while there are
	// any, waiting marks will be taken by one, or woken for when the last one ends.
	batches int
}

func newMarker(t *tenantDB, stats *writerStats) *marker {
	return &marker{
		t: t, stats: stats, wake: make(chan struct{}, 1), stop: make(chan struct{}),
		queued:    markQueue[dedupKey]{limit: maxMarksPerUpdate, exec: execQueuedMarks},
		delivered: markQueue[deliveredMark]{limit: maxDeliveredMarks, exec: execDeliveredMarks},
	}
}

// add queues r on q, one of m's queues.
func addMark[M any](m *marker, q *markQueue[M], r *markReq[M]) {
	m.mu.Lock()
	q.waiting = append(q.waiting, r)
	idle := m.batches == 0
	m.mu.Unlock()
	if idle {
		m.signal()
	}
}

func (m *marker) signal() {
	select {
	case m.wake <- struct{}{}:
	default: // already woken
	}
}

// batchComing counts a batch a writer is about to collect; batchEnded undoes it once the batch
// was written or dropped.
func (m *marker) batchComing() {
	m.mu.Lock()
	m.batches++
	m.mu.Unlock()
}

func (m *marker) batchEnded() {
	m.mu.Lock()
	m.batches--
	idle := m.batches == 0 && (len(m.queued.waiting) > 0 || len(m.delivered.waiting) > 0)
	m.mu.Unlock()
	if idle {
		m.signal()
	}
}

// carried is the marks one transaction wrote, to be answered once it ended.
type carried struct {
	queued    []*markReq[dedupKey]
	delivered []*markReq[deliveredMark]
}

// carryWaiting writes the waiting marks of q, one of m's queues, in the batch transaction tx and
// returns them; the caller settles them once tx has ended.
func carryWaiting[M any](ctx context.Context, m *marker, q *markQueue[M], tx *sql.Tx) ([]*markReq[M], error) {
	m.mu.Lock()
	batch := takeMarks(&q.waiting, q.limit)
	m.mu.Unlock()
	if len(batch) == 0 {
		return nil, nil
	}
	return batch, q.exec(ctx, tx, batch)
}

// settle answers the marks a batch transaction carried once it committed; if it failed, they
// are written again alone: a mark is answered only after a COMMIT that includes it.
func (m *marker) settle(c carried, err error) {
	if len(c.queued)+len(c.delivered) == 0 {
		return
	}
	if err == nil {
		answerMarks(c.queued, nil)
		answerMarks(c.delivered, nil)
		return
	}
	m.mu.Lock()
	m.queued.alone = append(m.queued.alone, c.queued...)
	m.delivered.alone = append(m.delivered.alone, c.delivered...)
	m.mu.Unlock()
	m.signal()
}

// run writes marks alone until stop is closed, then everything still waiting.
func (m *marker) run() {
	for {
		draining := false
		select {
		case <-m.wake:
		case <-m.stop:
			draining = true
		}
		for c := m.next(draining); len(c.queued)+len(c.delivered) > 0; c = m.next(draining) {
			answerMarks(c.queued, writeMarksAlone(m, &m.queued, c.queued))
			answerMarks(c.delivered, writeMarksAlone(m, &m.delivered, c.delivered))
		}
		if draining {
			return
		}
	}
}

// next takes what the marker writes now: marks of failed batches, and the waiting ones when no
// batch will take them (or the writers have stopped).
func (m *marker) next(draining bool) carried {
	m.mu.Lock()
	defer m.mu.Unlock()
	waiting := draining || m.batches == 0
	return carried{queued: m.queued.take(waiting), delivered: m.delivered.take(waiting)}
}

// writeMarksAlone sends the UPDATE of batch, marks of q, as a statement of its own.
func writeMarksAlone[M any](m *marker, q *markQueue[M], batch []*markReq[M]) error {
	if len(batch) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), DefaultTxTimeout)
	defer cancel()
	// The UPDATEs only raise a flag or a watermark, so a deadlock's victim is simply sent
	// again.
	if err := retryTransient(func() error { return q.exec(ctx, m.t.db, batch) }); err != nil {
		return err
	}
	m.stats.markTransactions.Add(1)
	return nil
}
