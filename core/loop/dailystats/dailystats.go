// Package dailystats keeps the daily summary behind the admin statistics (issue 6) without a
// hot row per message: it hears every stored message after COMMIT, sums the messages of each
// tenant and UTC day in memory, and adds the sums every few seconds with one upsert per tenant
// and day.
//
// The sums are not exact, on purpose. A crash loses what was summed since the last flush (a
// few seconds of counts), and a client's retry of a message whose ACK was lost is heard, and
// counted, again. Both only blur a dashboard figure; the exact per-month count is the route
// mirror's, written in the message's own transaction. Making the days exact would mean an
// upsert of the day's row inside every write transaction: one row all writers of a tenant
// contend on, which is what the group-commit writer exists to avoid (DESIGN §1).
package dailystats

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/stats"
	"github.com/imdhq/imd/core/domain/topic"
	"github.com/imdhq/imd/core/kit/periodic"
	"github.com/imdhq/imd/ports"
)

// key is one row of the summary.
type key struct {
	tenant string
	day    time.Time // midnight UTC
}

// Counter sums messages per tenant and day until Flush adds them to the summary.
type Counter struct {
	store ports.DailyCounter
	log   *slog.Logger

	mu      sync.Mutex
	pending map[key]stats.Day
}

var _ ports.CommitListener = (*Counter)(nil)

// New returns a counter adding to store.
func New(store ports.DailyCounter, log *slog.Logger) *Counter {
	return &Counter{store: store, log: log, pending: make(map[key]stats.Day)}
}

// Committed counts a stored message for the UTC day it was created on. It only touches memory
// under a short lock, so the send path never waits on the summary.
func (c *Counter) Committed(_ context.Context, tenant string, m message.Message) {
	day := stats.DayOf(m.CreatedAt)
	group := false
	if p, err := topic.Parse(m.Topic); err == nil {
		group = p.Kind == topic.Group
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	k := key{tenant: tenant, day: day}
	d := c.pending[k]
	d.Day = day
	d.Messages++
	if group {
		d.GroupMessages++
	} else {
		d.P2PMessages++
	}
	c.pending[k] = d
}

// Flush adds what was summed since the last flush, one upsert per tenant and day. Sums whose
// upsert failed are kept for the next flush; an upsert that committed but reported a failure
// is thus added twice, which the package comment accepts.
func (c *Counter) Flush(ctx context.Context) error {
	c.mu.Lock()
	batch := c.pending
	c.pending = make(map[key]stats.Day, len(batch))
	c.mu.Unlock()

	var errs []error
	for k, d := range batch {
		if err := c.store.AddDay(ctx, k.tenant, d); err != nil {
			errs = append(errs, err)
			c.keep(k, d)
		}
	}
	if err := errors.Join(errs...); err != nil {
		c.log.WarnContext(ctx, "daily stats not flushed, kept for the next flush", "rows", len(errs), "err", err)
		return err
	}
	return nil
}

// keep puts back sums a flush could not add.
func (c *Counter) keep(k key, d stats.Day) {
	c.mu.Lock()
	defer c.mu.Unlock()
	sum := c.pending[k]
	sum.Day = d.Day
	sum.Messages += d.Messages
	sum.GroupMessages += d.GroupMessages
	sum.P2PMessages += d.P2PMessages
	c.pending[k] = sum
}

// Run flushes every interval until ctx ends. It leaves the last sums to the caller, who
// flushes once more with a context of its own after the transports stopped (shutdown).
func (c *Counter) Run(ctx context.Context, every time.Duration) {
	periodic.Every(ctx, every, func(ctx context.Context) {
		_ = c.Flush(ctx) // logged; the sums wait for the next tick
	})
}
