// Package listrepair re-applies to the recipients' conversation lists the messages whose
// deliver jobs never acted on them (seed 003 §20 item 13, issue 33). A deliver queue that
// loses jobs while the lists survive (one partition's list deleted, a failover that rolls the
// queue back, a job dead-lettered) loses no message, which MySQL holds, but the lists would
// miss it: a conversation not moved up, an unread count short by it for good. Two things show
// such a message:
//
//   - a gap (dialog.Gap): the seqs a deliver consumer went past without their jobs, recorded
//     by the consumer (ports.ListGaps); a lost job is one, as is a send that failed (a hole)
//     or a job still on its way;
//   - a tail: a topic whose newest stored message is past its lists' preview (the newest seq
//     applied), found by sampling the active month's topics, since a lost job with nothing
//     after it leaves no gap.
//
// A Redis failover shows neither: the lost jobs acted, and their list updates were lost with
// the replication lag. The node watches the Redis masters' lineage and, when it changes,
// re-applies every message stored around the change (rollback.go).
//
// The repair reads those messages from MySQL and applies them as their deliver jobs would
// have (dialog.UpdateOf under the job's own marker), so a job that comes after all, or a
// second repair, counts nothing again. It pushes nothing: devices catch up by sync. Its cost
// is bounded per pass: Gaps gaps and Topics sampled topics, Messages messages each; a heal
// after a failover reads the messages of its window, once per node.
package listrepair

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/imdhq/imd/core/domain/delivery"
	"github.com/imdhq/imd/core/domain/dialog"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/kit/periodic"
	"github.com/imdhq/imd/core/kit/topicsample"
	"github.com/imdhq/imd/core/store/membership"
	"github.com/imdhq/imd/core/usecase/history"
	"github.com/imdhq/imd/ports"
)

// Defaults of Config.
const (
	DefaultInterval = 10 * time.Second
	DefaultSettle   = 30 * time.Second
	DefaultWindow   = time.Hour
	DefaultGaps     = 100
	DefaultTopics   = 100
	DefaultMessages = history.MaxLimit
	DefaultLookback = time.Minute
	DefaultMarkers  = 10 * time.Minute
)

// Config bounds the repair.
type Config struct {
	// Interval between passes.
	Interval time.Duration
	// Settle is how long a gap waits after it was noted, and a tail message after it was
	// stored, before the repair looks: a job still on its way acts by itself meanwhile.
	Settle time.Duration
	// Window is how long a gap stays repairable after it was noted, and a tail message after
	// it was stored. The list markers of a job behind its topic live as long
	// (deliver.Config.RepairWindow), so a repair never counts what such a job counted.
	Window time.Duration
	// Gaps is how many gaps one pass works through per tenant.
	Gaps int
	// Topics is how many topics one pass samples per tenant for a tail, shared by the months
	// the window reaches back to (the active one and those before it).
	Topics int
	// Messages is how many messages one gap or tail re-applies per pass (at most a history
	// page); a longer gap goes on in the next pass.
	Messages int
	// Lookback is how long before the Redis lineage was last seen unchanged a heal starts
	// (rollback.go): at least the replication lag a failover may lose.
	Lookback time.Duration
	// Markers is the shortest life of a deliver job's list markers (deliver.done_ttl): a heal
	// never re-applies a message older, whose markers may have expired with no failover.
	Markers time.Duration
}

// withDefaults gives every field not set (zero or less) its default.
func (c Config) withDefaults() Config {
	c.Interval = cmp.Or(max(c.Interval, 0), DefaultInterval)
	c.Settle = cmp.Or(max(c.Settle, 0), DefaultSettle)
	c.Window = cmp.Or(max(c.Window, 0), DefaultWindow)
	c.Gaps = cmp.Or(max(c.Gaps, 0), DefaultGaps)
	c.Topics = cmp.Or(max(c.Topics, 0), DefaultTopics)
	c.Messages = min(cmp.Or(max(c.Messages, 0), DefaultMessages), history.MaxLimit)
	c.Lookback = cmp.Or(max(c.Lookback, 0), DefaultLookback)
	c.Markers = cmp.Or(max(c.Markers, 0), DefaultMarkers)
	return c
}

// Deps are the ports the repair works through.
type Deps struct {
	Gaps    ports.ListGaps
	Dialogs ports.DialogStore
	// History reads the stored messages, as an admin (no member check).
	History *history.Service
	// Mirror lists the active month's topics for the tail sample.
	Mirror ports.RouteMirror
	Months ports.MonthState
	// Lineage tells a Redis failover or restart, after which the lists heal.
	Lineage ports.RedisLineage
	Members *membership.Cache
	Metrics ports.Metrics
	Clock   ports.Clock
	Log     *slog.Logger
}

// Service repairs the lists of every tenant it is given.
type Service struct {
	cfg Config
	d   Deps

	cursors *topicsample.Cursors // where the tail sample goes on in each month

	mu        sync.Mutex
	rollbacks rollbacks
}

// New returns the repair.
func New(cfg Config, d Deps) *Service {
	return &Service{cfg: cfg.withDefaults(), d: d, cursors: topicsample.New(), rollbacks: rollbacks{done: map[string]int{}}}
}

// Report is what one pass did.
type Report struct {
	Gaps     int // gaps worked through (closed, narrowed or expired)
	Expired  int // of which were older than the window, left unrepaired
	Sampled  int // topics sampled for a tail
	Repaired int // messages re-applied that changed some recipient's list
	Healed   int // windows around a Redis failover re-applied
}

// Results of deliver_list_repair_total.
const (
	resultRepaired = "repaired" // a message re-applied, with some list changed
	resultExpired  = "expired"  // a gap older than the window, left
	resultFailed   = "failed"   // a gap or topic whose repair failed (tried again next pass)
)

// RunEvery watches Redis' lineage and repairs the tenants every Interval until ctx ends.
func (s *Service) RunEvery(ctx context.Context, tenants func() []string) {
	periodic.Every(ctx, s.cfg.Interval, func(ctx context.Context) {
		if err := s.Watch(ctx); err != nil && ctx.Err() == nil {
			s.d.Log.WarnContext(ctx, "redis lineage unknown", "err", err)
		}
		for _, tenant := range tenants() {
			if _, err := s.Pass(ctx, tenant); err != nil && ctx.Err() == nil {
				s.d.Log.WarnContext(ctx, "list repair failed", "tenant", tenant, "err", err)
			}
		}
	})
}

// Pass re-applies the windows around a Redis failover the tenant is owed, works through its
// due gaps, then samples the next topics for a tail.
func (s *Service) Pass(ctx context.Context, tenant string) (Report, error) {
	var rep Report
	errHeals := s.heals(ctx, tenant, &rep)
	errGaps := s.gaps(ctx, tenant, &rep)
	errTails := s.tails(ctx, tenant, &rep)
	if rep.Repaired > 0 || rep.Expired > 0 {
		s.d.Log.WarnContext(ctx, "conversation lists repaired", "tenant", tenant, "healed", rep.Healed, "gaps", rep.Gaps,
			"expired", rep.Expired, "sampled", rep.Sampled, "messages", rep.Repaired)
	}
	return rep, errors.Join(errHeals, errGaps, errTails)
}

// gaps re-applies the stored messages of the due gaps, newest first within each, and closes
// a gap once done; a gap longer than Messages is narrowed to what is left.
func (s *Service) gaps(ctx context.Context, tenant string, rep *Report) error {
	now := s.d.Clock.Now()
	due, err := s.d.Gaps.Due(ctx, tenant, now.Add(-s.cfg.Settle), s.cfg.Gaps)
	if err != nil {
		return fmt.Errorf("list gaps of %s: %w", tenant, err)
	}
	var errs error
	for _, g := range due {
		if now.Sub(g.Noted) > s.cfg.Window {
			rep.Gaps++
			rep.Expired++
			s.d.Metrics.Inc("deliver_list_repair_total", resultExpired)
			s.d.Log.WarnContext(ctx, "list gap older than the repair window left", "tenant", tenant, "topic", g.Topic, "from", g.From, "to", g.To, "noted", g.Noted)
			errs = errors.Join(errs, s.close(ctx, tenant, g, nil))
			continue
		}
		msgs, err := s.d.History.History(ctx, history.HistoryRequest{Tenant: tenant, Topic: g.Topic, Before: g.To + 1, Limit: s.cfg.Messages})
		if err != nil {
			errs = errors.Join(errs, s.failed(fmt.Errorf("list gap %s %d-%d of %s: %w", g.Topic, g.From, g.To, tenant, err)))
			continue
		}
		var in []message.Message
		for _, m := range msgs {
			if m.Seq >= g.From {
				in = append(in, m)
			}
		}
		if err := s.apply(ctx, tenant, g.Topic, in, rep); err != nil {
			errs = errors.Join(errs, s.failed(err))
			continue
		}
		var rest *dialog.Gap
		if len(msgs) == s.cfg.Messages && len(in) == len(msgs) && in[len(in)-1].Seq > g.From {
			// The page ended inside the gap: what is before it is left for the next pass.
			r := g
			r.To = in[len(in)-1].Seq - 1
			rest = &r
		}
		rep.Gaps++
		errs = errors.Join(errs, s.close(ctx, tenant, g, rest))
	}
	return errs
}

// close removes a worked gap, recording what is left of it first (at its first time).
func (s *Service) close(ctx context.Context, tenant string, g dialog.Gap, rest *dialog.Gap) error {
	if rest != nil {
		if err := s.d.Gaps.Note(ctx, tenant, g.Noted, *rest); err != nil {
			return fmt.Errorf("list gap %s of %s: rest: %w", g.Topic, tenant, err)
		}
	}
	if err := s.d.Gaps.Close(ctx, tenant, g); err != nil {
		return fmt.Errorf("list gap %s of %s: close: %w", g.Topic, tenant, err)
	}
	return nil
}

// tails samples the next topics of each month the window reaches back to, up to Topics in
// all (each pass goes on where the last stopped in each month, wrapping at its end), and
// repairs those whose newest message is past the preview. A topic whose newest message is
// younger than Settle is left to its jobs (and to a later pass): what they lose before a
// later message shows as a gap.
func (s *Service) tails(ctx context.Context, tenant string, rep *Report) error {
	now := s.d.Clock.Now()
	months, err := s.months(ctx, tenant, now.Add(-s.cfg.Window))
	if err != nil {
		return err
	}
	topics, err := s.cursors.Next(ctx, tenant, months, s.cfg.Topics, func(ctx context.Context, m month.Month, after string, limit int) ([]string, error) {
		return s.d.Mirror.TopicsIn(ctx, tenant, m, after, limit)
	})
	if err != nil {
		return s.failed(fmt.Errorf("list repair of %s: %w", tenant, err))
	}
	var errs error
	for _, topic := range topics {
		rep.Sampled++
		if err := s.tail(ctx, tenant, topic, now, rep); err != nil {
			errs = errors.Join(errs, s.failed(err))
		}
	}
	return errs
}

// tail repairs one topic's messages past its preview, those stored within the window and
// before Settle.
func (s *Service) tail(ctx context.Context, tenant, topic string, now time.Time, rep *Report) error {
	newest, err := s.d.History.History(ctx, history.HistoryRequest{Tenant: tenant, Topic: topic, Limit: 1})
	if err != nil {
		return fmt.Errorf("list repair of %s in %s: newest message: %w", topic, tenant, err)
	}
	if len(newest) == 0 || newest[0].CreatedAt.After(now.Add(-s.cfg.Settle)) {
		return nil
	}
	applied, err := s.d.Dialogs.AppliedSeq(ctx, tenant, newest[0].ConversationID)
	if err != nil {
		return fmt.Errorf("list repair of %s in %s: applied seq: %w", topic, tenant, err)
	}
	if applied >= newest[0].Seq {
		return nil
	}
	page, err := s.d.History.History(ctx, history.HistoryRequest{Tenant: tenant, Topic: topic, Limit: s.cfg.Messages})
	if err != nil {
		return fmt.Errorf("list repair of %s in %s: messages: %w", topic, tenant, err)
	}
	var missed []message.Message
	for _, m := range page {
		if m.Seq > applied && !m.CreatedAt.Before(now.Add(-s.cfg.Window)) && !m.CreatedAt.After(now.Add(-s.cfg.Settle)) {
			missed = append(missed, m)
		}
	}
	return s.apply(ctx, tenant, topic, missed, rep)
}

// months are the active month and those before it back to since's, newest first.
func (s *Service) months(ctx context.Context, tenant string, since time.Time) ([]month.Month, error) {
	active, err := s.activeMonth(ctx, tenant)
	if err != nil {
		return nil, err
	}
	var months []month.Month
	for m := active; m >= month.Of(since) || m == active; m = m.Add(-1) {
		months = append(months, m)
	}
	return months, nil
}

// activeMonth is the month new messages go to: Redis's, or the calendar's on Redis TIME.
func (s *Service) activeMonth(ctx context.Context, tenant string) (month.Month, error) {
	m, found, err := s.d.Months.Active(ctx, tenant)
	if err != nil {
		return 0, fmt.Errorf("list repair of %s: active month: %w", tenant, err)
	}
	if found {
		return m, nil
	}
	now, err := s.d.Months.Now(ctx)
	if err != nil {
		return 0, fmt.Errorf("list repair of %s: redis time: %w", tenant, err)
	}
	return month.Of(now), nil
}

func (s *Service) failed(err error) error {
	s.d.Metrics.Inc("deliver_list_repair_total", resultFailed)
	return err
}

// apply re-applies messages of topic, all of one conversation, to its members' lists as their
// deliver jobs would have: under each job's marker, which lives the window.
func (s *Service) apply(ctx context.Context, tenant, topic string, msgs []message.Message, rep *Report) error {
	if len(msgs) == 0 {
		return nil
	}
	users, err := s.d.Members.Members(ctx, tenant, topic)
	if err != nil {
		return fmt.Errorf("list repair of %s in %s: members: %w", topic, tenant, err)
	}
	batches := dialog.BatchesOf(users)
	updates := make([]dialog.Update, len(msgs))
	// Oldest first, as the jobs would have come.
	for i, m := range msgs {
		once := delivery.Job{Kind: delivery.KindMessage, MsgID: m.MsgID}.DoneKey()
		updates[len(msgs)-1-i] = dialog.UpdateOf(m, once, s.cfg.Window, batches)
	}
	applied, err := s.d.Dialogs.Apply(ctx, tenant, updates...)
	if want := len(msgs) * len(batches); err == nil && len(applied) != want {
		err = fmt.Errorf("list store answered %d batches of %d", len(applied), want)
	}
	if err != nil {
		return fmt.Errorf("list repair of %s in %s: %w", topic, tenant, err)
	}
	for _, u := range updates {
		changed := false
		for _, a := range applied[:len(u.Batches)] {
			changed = changed || a.First
		}
		applied = applied[len(u.Batches):]
		if changed {
			rep.Repaired++
			s.d.Metrics.Inc("deliver_list_repair_total", resultRepaired)
		}
	}
	return nil
}
