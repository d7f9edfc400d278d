package mysql

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/imdhq/imd/adapters/mysql/sqlcdb"
)

// maxDeliveredMarks bounds the marks of one UPDATE, so one statement never holds many rows'
// locks long.
const maxDeliveredMarks = 256

// deliveredMarkTimeout bounds one batch's UPDATE: it runs for every caller in it, so no one
// caller's context cancels it.
const deliveredMarkTimeout = 5 * time.Second

// deliveredMarks gathers the delivered marks of each tenant (every PUSH_ACK of a P2P message,
// DESIGN §13 "Read receipts") into shared UPDATEs (issue 30 part 4): the first mark of an idle
// tenant goes at once, alone; the marks that come while one of the tenant is in flight queue up
// and go together in the next, as soon as that one returns. One autocommit UPDATE per ack cost
// imd a round trip and MariaDB a transaction and a log flush each (DESIGN, issue 30).
type deliveredMarks struct {
	mu      sync.Mutex
	waiting map[string][]*markRaise // by tenant; present while a batch of the tenant runs
}

func newDeliveredMarks() *deliveredMarks {
	return &deliveredMarks{waiting: map[string][]*markRaise{}}
}

// deliveredMark raises user's delivered watermark of the conversation to seq.
type deliveredMark struct{ conversationID, user, seq int64 }

type markRaise struct {
	ctx  context.Context // the caller's: one that gave up before its batch left is not sent
	t    *tenantDB       // the tenant's database when the mark came
	mark deliveredMark
	done chan error // buffered
}

// raise runs m in the tenant's next batch and returns its outcome; ctx bounds the wait.
func (d *deliveredMarks) raise(ctx context.Context, tenant string, t *tenantDB, m deliveredMark) error {
	req := &markRaise{ctx: ctx, t: t, mark: m, done: make(chan error, 1)}
	d.mu.Lock()
	if q, busy := d.waiting[tenant]; busy {
		d.waiting[tenant] = append(q, req)
		d.mu.Unlock()
	} else {
		d.waiting[tenant] = nil
		d.mu.Unlock()
		go d.run(tenant, []*markRaise{req})
	}
	select {
	case err := <-req.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// run writes batch, then the marks that queued meanwhile, until none is left.
func (d *deliveredMarks) run(tenant string, batch []*markRaise) {
	for {
		writeMarks(batch)
		d.mu.Lock()
		q := d.waiting[tenant]
		if len(q) == 0 {
			delete(d.waiting, tenant)
			d.mu.Unlock()
			return
		}
		n := min(len(q), maxDeliveredMarks)
		batch = q[:n:n]
		d.waiting[tenant] = q[n:]
		d.mu.Unlock()
	}
}

// writeMarks sends the marks of batch whose callers still wait in one UPDATE, on the database
// of the first, and answers each.
func writeMarks(batch []*markRaise) {
	live := batch[:0:0]
	for _, r := range batch {
		if err := r.ctx.Err(); err != nil {
			r.done <- err
			continue
		}
		live = append(live, r)
	}
	if len(live) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(live[0].ctx), deliveredMarkTimeout)
	defer cancel()
	marks := marksOf(live)
	// A batch's rows meet other transactions' locks more often than one row did; the UPDATE
	// only raises, so a deadlock's victim is simply sent again.
	err := retryTransient(func() error { return execDeliveredMarks(ctx, live[0].t.db, marks) })
	for _, r := range live {
		r.done <- err
	}
}

// marksOf is one mark per member row, the highest seq, in key order: a row is named once in
// an UPDATE (a multi-table UPDATE changes a row once, whichever match comes first), and every
// batch locks rows in the same order.
func marksOf(batch []*markRaise) []deliveredMark {
	out := make([]deliveredMark, 0, len(batch))
	for _, r := range batch {
		out = append(out, r.mark)
	}
	slices.SortFunc(out, func(a, b deliveredMark) int {
		return cmp.Or(cmp.Compare(a.conversationID, b.conversationID), cmp.Compare(a.user, b.user), cmp.Compare(b.seq, a.seq))
	})
	return slices.CompactFunc(out, func(a, b deliveredMark) bool {
		return a.conversationID == b.conversationID && a.user == b.user
	})
}

// execDeliveredMarks sends the UPDATE that raises marks (sql/queries/receipts.sql).
func execDeliveredMarks(ctx context.Context, db sqlcdb.DBTX, marks []deliveredMark) error {
	upd := rowBatch{sep: sepUnion}
	for _, m := range marks {
		p := sqlcdb.RaiseDeliveredParams{ConversationID: m.conversationID, UserID: m.user, Seq: m.seq}
		if err := upd.add(func(q *sqlcdb.Queries) error { return q.RaiseDelivered(ctx, p) }); err != nil {
			return err
		}
	}
	if err := upd.exec(ctx, db); err != nil {
		return fmt.Errorf("raise %d delivered marks: %w", len(marks), err)
	}
	return nil
}
