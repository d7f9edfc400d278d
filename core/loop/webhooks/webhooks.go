// Package webhooks delivers a tenant's events to its webhook endpoints (docs/DESIGN.md
// issue-32 part 2): the backlog read from MySQL through the route mirror and the month tables,
// one request in flight per endpoint and topic, a topic's cursor moved only by a 2xx, retries
// with backoff, a dead letter after the last attempt; edits and recalls, and the member,
// friendship and report events, come from records their changes' transactions wrote.
package webhooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/social"
	"github.com/imdhq/imd/core/domain/topic"
	"github.com/imdhq/imd/core/domain/webhook"
	"github.com/imdhq/imd/core/kit/periodic"
	"github.com/imdhq/imd/core/usecase/conversation"
	"github.com/imdhq/imd/core/usecase/history"
	"github.com/imdhq/imd/ports"
)

// Config bounds the delivery; zero fields take the defaults of DESIGN issue-32.
type Config struct {
	// Settle is how far behind its scan mark a pass looks again, so a commit that became
	// visible after the mark was set is still found.
	Settle      time.Duration
	FirstRetry  time.Duration
	MaxBackoff  time.Duration
	MaxAttempts int
	// Batch is how many topics a mirror page and how many messages a topic page hold.
	Batch int
	// LeaseTTL is the lease a pass holds; a pass renews it each third of it, so a long pass
	// keeps it and a dead node's lapses soon.
	LeaseTTL time.Duration
	// KeepEvents is how long the recorded member, friendship and report events are kept.
	KeepEvents time.Duration
}

func (c Config) withDefaults() Config {
	def := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&c.Settle, 10*time.Second)
	def(&c.FirstRetry, time.Second)
	def(&c.MaxBackoff, 10*time.Minute)
	def(&c.LeaseTTL, 5*time.Minute)
	def(&c.KeepEvents, 90*24*time.Hour)
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = 8
	}
	if c.Batch <= 0 {
		c.Batch = 100
	}
	return c
}

// ChangedTopics is the route mirror's TopicsSince (ports.RouteMirror).
type ChangedTopics interface {
	TopicsSince(ctx context.Context, tenant string, m month.Month, since time.Time, after string, limit int) ([]string, error)
}

// Syncer pages a topic from MySQL across months: forward (history.Service.Sync) and backward
// (history.Service.History).
type Syncer interface {
	Sync(ctx context.Context, r history.SyncRequest) (history.SyncResult, error)
	History(ctx context.Context, r history.HistoryRequest) ([]message.Message, error)
}

// Readers says whether a user may read a conversation (conversation.Resolver.ForRead): an
// endpoint bound to a bot receives only what the bot may read.
type Readers interface {
	ForRead(ctx context.Context, tenant string, user int64, a conversation.Address) (social.Conversation, error)
}

// Deps are the ports the loop uses.
type Deps struct {
	Endpoints ports.WebhookEndpoints
	Cursors   ports.WebhookCursors
	Changes   ChangedTopics
	History   Syncer
	Revisions ports.WebhookRevisions
	Events    ports.WebhookEvents
	Readers   Readers
	Sender    ports.WebhookSender
	Locks     ports.Locks
	Metrics   ports.Metrics
	Clock     ports.Clock
	Log       *slog.Logger
}

// Loop runs delivery passes. The retry state of a topic lives in the node that delivers it:
// a node taking the lease over starts the count again, which only adds attempts.
type Loop struct {
	cfg Config
	d   Deps

	mu      sync.Mutex
	retries map[topicKey]retry
	// aged are the endpoints of each tenant whose backlog age this node reports, zeroed when
	// another node holds the tenant so a stale age of this node does not alert.
	aged map[string][]int64
	// pruned is when this node last found no recorded event of a tenant left to prune.
	pruned map[string]time.Time
}

type topicKey struct {
	tenant   string
	endpoint int64
	topic    string
}

type retry struct {
	// seq is the event retried: another node may have delivered it meanwhile (the lease moves
	// between passes), and a new seq starts its count again.
	seq      int64
	attempts int
	next     time.Time
	// pending is when the event waiting for its retry was created: the scan mark stays there.
	pending time.Time
}

// New returns the loop.
func New(cfg Config, d Deps) *Loop {
	return &Loop{cfg: cfg.withDefaults(), d: d, retries: make(map[topicKey]retry), aged: make(map[string][]int64), pruned: make(map[string]time.Time)}
}

// Pass delivers what is due to every enabled endpoint of tenant, when this node holds the
// tenant's lease; another node's lease makes it a no-op.
func (l *Loop) Pass(ctx context.Context, tenant string) error {
	token, ok, err := l.d.Locks.Acquire(ctx, tenant, webhook.LeaseName, l.cfg.LeaseTTL)
	if err != nil {
		return fmt.Errorf("webhooks of %s: take the lease: %w", tenant, err)
	}
	if !ok {
		l.unreport(tenant)
		return nil
	}
	defer func() {
		// Released even when ctx ended, so the next pass need not wait for the lease to lapse.
		if err := l.d.Locks.Release(context.WithoutCancel(ctx), tenant, webhook.LeaseName, token); err != nil {
			l.d.Log.Warn("webhooks: release the lease", "tenant", tenant, "err", err)
		}
	}()
	p := &pass{tenant: tenant, token: token, renewed: l.d.Clock.Now()}
	eps, err := l.d.Endpoints.Endpoints(ctx, tenant)
	if err != nil {
		return fmt.Errorf("webhooks of %s: list endpoints: %w", tenant, err)
	}
	var errs []error
	for _, e := range eps {
		if !e.Enabled {
			continue
		}
		if err := l.endpoint(ctx, p, e); err != nil {
			errs = append(errs, fmt.Errorf("webhooks of %s, endpoint %d: %w", tenant, e.ID, err))
		}
		if errors.Is(err, errLeaseLost) {
			return errors.Join(errs...)
		}
	}
	if err := l.prune(ctx, tenant, eps); err != nil {
		errs = append(errs, fmt.Errorf("webhooks of %s: %w", tenant, err))
	}
	return errors.Join(errs...)
}

// Pruning deletes at most pruneBatch recorded events per pass, and once none is left waits
// pruneEvery before it looks again, so a quiet tenant costs one DELETE an hour.
const (
	pruneBatch = 1000
	pruneEvery = time.Hour
)

// prune deletes the recorded events older than KeepEvents (docs/DESIGN.md issue-32 part 2
// "Member, friendship and report events"): every tenant records them, endpoints or not. It
// stops below the first one an enabled endpoint of eps subscribed to them has not passed, so
// no event is lost before it was delivered or dead-lettered.
func (l *Loop) prune(ctx context.Context, tenant string, eps []webhook.Endpoint) error {
	now := l.d.Clock.Now()
	l.mu.Lock()
	last := l.pruned[tenant]
	l.mu.Unlock()
	if now.Sub(last) < pruneEvery {
		return nil
	}
	before := now.Add(-l.cfg.KeepEvents)
	below := int64(math.MaxInt64)
	for _, e := range eps {
		held, err := l.held(ctx, tenant, e, before)
		if err != nil {
			return fmt.Errorf("prune the recorded events: %w", err)
		}
		below = min(below, held)
	}
	n, err := l.d.Events.DeleteEventsBefore(ctx, tenant, before, below, pruneBatch)
	if err != nil {
		return fmt.Errorf("prune the recorded events: %w", err)
	}
	if n < pruneBatch {
		l.mu.Lock()
		l.pruned[tenant] = now
		l.mu.Unlock()
	}
	return nil
}

// held is the id of the first recorded event made before before that endpoint e has yet to
// pass (deliver or dead-letter), math.MaxInt64 when none: the events its stream still reads,
// after its cursor and from where its reading begins. A disabled endpoint, or one not
// subscribed to these events, holds none (docs/DESIGN.md issue-32 part 2 "Member, friendship
// and report events"): it is not read, so it would hold them for ever.
func (l *Loop) held(ctx context.Context, tenant string, e webhook.Endpoint, before time.Time) (int64, error) {
	if !e.Enabled || !slices.ContainsFunc(e.Events, recordedEvent) {
		return math.MaxInt64, nil
	}
	_, from, since, err := l.bounds(ctx, tenant, e)
	if err != nil {
		return 0, err
	}
	cur, _, err := l.d.Cursors.TopicCursor(ctx, tenant, e.ID, webhook.EventStream)
	if err != nil {
		return 0, fmt.Errorf("read the %s cursor of endpoint %d: %w", webhook.EventStream, e.ID, err)
	}
	first, err := l.eventsAfter(ctx, tenant, cur, latest(from, since), before, 1)
	if err != nil {
		return 0, fmt.Errorf("first event endpoint %d has yet to pass: %w", e.ID, err)
	}
	if len(first) == 0 {
		return math.MaxInt64, nil
	}
	l.d.Log.WarnContext(ctx, "webhooks: an endpoint holds events past webhooks.keep_events", "tenant", tenant, "endpoint", e.ID,
		"event", first[0].ID, "made", first[0].At)
	return first[0].ID, nil
}

// bounds reads endpoint e's scan mark and says where its events begin (its creation, or the
// point of its last replay) and from when a pass looks for changes (Settle before the mark).
func (l *Loop) bounds(ctx context.Context, tenant string, e webhook.Endpoint) (scan webhook.Scan, from, since time.Time, err error) {
	scan, found, err := l.d.Cursors.ScanMark(ctx, tenant, e.ID)
	if err != nil {
		return webhook.Scan{}, time.Time{}, time.Time{}, fmt.Errorf("read scan mark: %w", err)
	}
	if !found {
		scan.Mark = e.CreatedAt
	}
	from = e.CreatedAt
	if !scan.ReplayFrom.IsZero() {
		from = scan.ReplayFrom
	}
	return scan, from, scan.Mark.Add(-l.cfg.Settle), nil
}

// errLeaseLost ends a pass whose lease lapsed or was taken: another node or a replay now owns
// the tenant's cursors, and a write of this pass would be stale.
var errLeaseLost = errors.New("webhook lease lost")

// pass is one delivery pass of a tenant under its lease.
type pass struct {
	tenant  string
	token   string
	renewed time.Time
}

// keep renews the pass's lease once a third of it has gone, before every event, so a pass
// longer than LeaseTTL keeps it, and fails with errLeaseLost when it is gone.
func (l *Loop) keep(ctx context.Context, p *pass) error {
	now := l.d.Clock.Now()
	if now.Sub(p.renewed) < l.cfg.LeaseTTL/3 {
		return nil
	}
	ok, err := l.d.Locks.Renew(ctx, p.tenant, webhook.LeaseName, p.token, l.cfg.LeaseTTL)
	if err != nil {
		return fmt.Errorf("renew the lease: %w", err)
	}
	if !ok {
		return errLeaseLost
	}
	p.renewed = now
	return nil
}

// endpoint walks the topics changed since the endpoint's scan mark and moves the mark to the
// oldest event still undelivered, so a topic waiting for a retry or a seq is found again.
//
// A topic that fails (its read, its cursor's write) is logged and left for the next pass while
// the others go on; the mark then stays where it was, so that topic is found again.
func (l *Loop) endpoint(ctx context.Context, p *pass, e webhook.Endpoint) error {
	tenant := p.tenant
	now := l.d.Clock.Now()
	scan, from, since, err := l.bounds(ctx, tenant, e)
	if err != nil {
		return err
	}
	next, failed := now, false
	fail := func(what string, err error) {
		l.d.Log.WarnContext(ctx, "webhooks: left for the next pass", "tenant", tenant, "endpoint", e.ID, "what", what, "err", err)
		failed = true
	}
	for _, st := range l.streams() {
		if !slices.ContainsFunc(e.Events, st.carries) {
			continue
		}
		pending, err := l.stream(ctx, p, e, st, latest(from, since), now)
		switch {
		case errors.Is(err, errLeaseLost):
			return err
		case err != nil:
			fail(st.name, err)
		case !pending.IsZero() && pending.Before(next):
			next = pending
		}
	}
	for m := month.Of(since); e.Subscribed(webhook.MessageCreated) && m <= month.Of(now); m = m.Next() {
		for after := ""; ; {
			topics, err := l.d.Changes.TopicsSince(ctx, tenant, m, since, after, l.cfg.Batch)
			if err != nil {
				return fmt.Errorf("changed topics of %s: %w", m, err)
			}
			for _, t := range topics {
				pending, err := l.topic(ctx, p, e, from, t, now)
				if errors.Is(err, errLeaseLost) {
					return err
				}
				if err != nil {
					fail(t, err)
					continue
				}
				if !pending.IsZero() && pending.Before(next) {
					next = pending
				}
			}
			if len(topics) < l.cfg.Batch {
				break
			}
			after = topics[len(topics)-1]
		}
	}
	if failed && scan.Mark.Before(next) {
		next = scan.Mark
	}
	if err := l.keep(ctx, p); err != nil {
		return err
	}
	if err := l.d.Cursors.SetScanMark(ctx, tenant, e.ID, next); err != nil {
		return fmt.Errorf("set scan mark: %w", err)
	}
	l.report(tenant, e.ID, now.Sub(next))
	return nil
}

// report sets the age of endpoint's oldest undelivered event (the scan mark: a retry waiting, a
// seq not committed, a topic that failed), so an endpoint that is slow but never fails outright
// is seen (docs/DESIGN.md issue-32 part 2 "Operators").
func (l *Loop) report(tenant string, endpoint int64, age time.Duration) {
	l.d.Metrics.Set("webhook_oldest_undelivered_seconds", max(age, 0).Seconds(), tenant, strconv.FormatInt(endpoint, 10))
	l.mu.Lock()
	defer l.mu.Unlock()
	if !slices.Contains(l.aged[tenant], endpoint) {
		l.aged[tenant] = append(l.aged[tenant], endpoint)
	}
}

// unreport zeroes the ages this node reported for tenant: another node delivers it now.
func (l *Loop) unreport(tenant string) {
	l.mu.Lock()
	eps := l.aged[tenant]
	delete(l.aged, tenant)
	l.mu.Unlock()
	for _, id := range eps {
		l.d.Metrics.Set("webhook_oldest_undelivered_seconds", 0, tenant, strconv.FormatInt(id, 10))
	}
}

// topic delivers topic's messages above the endpoint's cursor in seq order, one at a time,
// and returns when the first one it could not deliver was created (zero when none is left).
// It stops at a missing seq: every allocated seq ends as a message or a tombstone (DESIGN §4),
// so waiting never skips one.
func (l *Loop) topic(ctx context.Context, p *pass, e webhook.Endpoint, from time.Time, t string, now time.Time) (time.Time, error) {
	tenant := p.tenant
	key := topicKey{tenant, e.ID, t}
	if r, ok := l.retryOf(key); ok && now.Before(r.next) {
		return r.pending, nil
	}
	if ok, err := l.readable(ctx, tenant, e, t); err != nil || !ok {
		return time.Time{}, err
	}
	cur, known, err := l.d.Cursors.TopicCursor(ctx, tenant, e.ID, t)
	if err != nil {
		return time.Time{}, fmt.Errorf("read cursor of %s: %w", t, err)
	}
	if !known {
		if cur, err = l.start(ctx, tenant, t, from); err != nil {
			return time.Time{}, err
		}
		if err := l.d.Cursors.SetTopicCursor(ctx, tenant, e.ID, t, cur); err != nil {
			return time.Time{}, fmt.Errorf("set cursor of %s to %d: %w", t, cur, err)
		}
	}
	res, err := l.d.History.Sync(ctx, history.SyncRequest{Tenant: tenant, Topic: t, Since: cur, Limit: l.cfg.Batch})
	if err != nil {
		return time.Time{}, fmt.Errorf("read %s after seq %d: %w", t, cur, err)
	}
	for _, m := range res.Messages {
		if m.Seq != cur+1 {
			return m.CreatedAt, nil
		}
		if err := l.keep(ctx, p); err != nil {
			return m.CreatedAt, err
		}
		// Tombstones close a seq without an event.
		if m.Status != message.StatusDeleted {
			ev, err := created(tenant, m)
			if err != nil {
				return m.CreatedAt, err
			}
			done, err := l.deliver(ctx, tenant, e, key, ev, m.Seq)
			if err != nil || !done {
				return m.CreatedAt, err
			}
		}
		if err := l.d.Cursors.SetTopicCursor(ctx, tenant, e.ID, t, m.Seq); err != nil {
			return m.CreatedAt, fmt.Errorf("set cursor of %s to %d: %w", t, m.Seq, err)
		}
		cur = m.Seq
	}
	if res.HasMore {
		return res.Messages[len(res.Messages)-1].CreatedAt, nil
	}
	return time.Time{}, nil
}

// readable is whether endpoint e receives topic's events: every topic, or for an endpoint bound
// to a bot those the bot may read, asked each time so a conversation it joins later is
// delivered from then.
func (l *Loop) readable(ctx context.Context, tenant string, e webhook.Endpoint, t string) (bool, error) {
	if e.BotID == 0 {
		return true, nil
	}
	switch _, err := l.d.Readers.ForRead(ctx, tenant, e.BotID, conversation.Address{Topic: t}); {
	case apperr.CodeOf(err) == apperr.Forbidden || apperr.CodeOf(err) == apperr.NotFound:
		return false, nil
	case err != nil:
		return false, fmt.Errorf("may bot %d read %s: %w", e.BotID, t, err)
	}
	return true, nil
}

// recorded is a stream of records in the tenant database that the changes' own transactions
// wrote: the edits and recalls (im_message_revisions) or the member, friendship and report
// events (t_webhook_events). Each endpoint keeps one cursor over its record ids.
type recorded struct {
	name    string // the cursor's topic name
	carries func(webhook.EventType) bool
	// read lists at most limit events of records after id after, made in [from, until), by id.
	read func(ctx context.Context, tenant string, after int64, from, until time.Time, limit int) ([]item, error)
}

// item is one record of a stream as the event it is.
type item struct {
	id int64
	ev webhook.Event
}

// streams are the recorded streams an endpoint's pass walks besides the topics.
func (l *Loop) streams() []recorded {
	return []recorded{
		{name: webhook.RevisionStream, carries: revised, read: l.revisionItems},
		{name: webhook.EventStream, carries: recordedEvent, read: l.eventItems},
	}
}

func revised(t webhook.EventType) bool {
	return t == webhook.MessageEdited || t == webhook.MessageRecalled
}

func recordedEvent(t webhook.EventType) bool {
	return t == webhook.MemberJoined || t == webhook.MemberLeft || t == webhook.FriendshipChanged || t == webhook.ReportFiled
}

// revisionItems are the edits and recalls as message.edited and message.recalled events (docs/DESIGN.md
// issue-32 part 2 "Edits and recalls"), read like the recorded events (readFromFirst).
func (l *Loop) revisionItems(ctx context.Context, tenant string, after int64, from, until time.Time, limit int) ([]item, error) {
	page, err := readFromFirst("revision", after, from,
		func() (int64, bool, error) { return l.d.Revisions.FirstRevision(ctx, tenant, from, until) },
		func(after int64) ([]webhook.Revision, error) {
			return l.d.Revisions.RevisionsAfter(ctx, tenant, after, from, until, limit)
		})
	if err != nil {
		return nil, err
	}
	out := make([]item, len(page))
	for i, r := range page {
		data, err := json.Marshal(webhook.RevisionData{Topic: r.Topic, Seq: r.Seq, MsgID: r.MsgID, Version: r.Version, Editor: r.Editor,
			Content: r.Content, EditedAt: r.At.UnixMilli()})
		if err != nil {
			return nil, fmt.Errorf("encode revision %d: %w", r.ID, err)
		}
		out[i] = item{id: r.ID, ev: webhook.Event{ID: webhook.RevisionEventID(r), Type: r.Type(), Tenant: tenant, Topic: r.Topic, Seq: r.Seq,
			At: r.At.UnixMilli(), Data: data}}
	}
	return out, nil
}

// eventItems are the member, friendship and report events as recorded (docs/DESIGN.md
// issue-32 part 2 "Member, friendship and report events"); their seq is the record's id.
func (l *Loop) eventItems(ctx context.Context, tenant string, after int64, from, until time.Time, limit int) ([]item, error) {
	page, err := l.eventsAfter(ctx, tenant, after, from, until, limit)
	if err != nil {
		return nil, err
	}
	out := make([]item, len(page))
	for i, r := range page {
		out[i] = item{id: r.ID, ev: webhook.Event{ID: webhook.RecordEventID(r), Type: r.Type, Tenant: tenant, Topic: r.Topic, Seq: r.ID,
			At: r.At.UnixMilli(), Data: r.Data}}
	}
	return out, nil
}

// eventsAfter lists at most limit recorded events after id after made in [from, until), the
// rows of EventsAfter, read from the first one in the window when there is no cursor
// (readFromFirst).
func (l *Loop) eventsAfter(ctx context.Context, tenant string, after int64, from, until time.Time, limit int) ([]webhook.Record, error) {
	return readFromFirst("webhook event", after, from,
		func() (int64, bool, error) { return l.d.Events.FirstEvent(ctx, tenant, from, until) },
		func(after int64) ([]webhook.Record, error) {
			return l.d.Events.EventsAfter(ctx, tenant, after, from, until, limit)
		})
}

// readFromFirst reads a page of a recorded stream (the revisions, the events) of the window
// from from with read, after id after. After 0 is no cursor (ids start at 1): a new endpoint's,
// or one a replay dropped. A read by id from there would walk every record made before the
// window, on every pass until the first one is passed, so it starts just below the first
// record made in the window instead, which first finds through the index on the time at the
// cost of the window's records: the endpoint's own backlog, once (docs/DESIGN.md issue-32
// part 2 "Edits and recalls", "Member, friendship and report events"). No record in the
// window, no read. A cursor is read from as it is: what follows it is what the endpoint has
// yet to pass.
func readFromFirst[T any](what string, after int64, from time.Time,
	first func() (int64, bool, error), read func(after int64) ([]T, error)) ([]T, error) {
	if after == 0 {
		id, found, err := first()
		if err != nil {
			return nil, fmt.Errorf("find the first %s made from %s: %w", what, from.UTC().Format(time.RFC3339), err)
		}
		if !found {
			return nil, nil
		}
		after = id - 1
	}
	page, err := read(after)
	if err != nil {
		return nil, fmt.Errorf("read %ss after %d: %w", what, after, err)
	}
	return page, nil
}

// stream delivers the records of st made from lower on, in the order of their ids, one at a
// time, a failed one holding the ones behind it; records are read once older than Settle, so
// one committed late is still in order. It returns when the first one it could not deliver was
// made (zero when none is left).
func (l *Loop) stream(ctx context.Context, p *pass, e webhook.Endpoint, st recorded, lower, now time.Time) (time.Time, error) {
	tenant := p.tenant
	key := topicKey{tenant, e.ID, st.name}
	if r, ok := l.retryOf(key); ok && now.Before(r.next) {
		return r.pending, nil
	}
	cur, _, err := l.d.Cursors.TopicCursor(ctx, tenant, e.ID, st.name)
	if err != nil {
		return time.Time{}, fmt.Errorf("read the %s cursor: %w", st.name, err)
	}
	page, err := st.read(ctx, tenant, cur, lower, now.Add(-l.cfg.Settle), l.cfg.Batch)
	if err != nil {
		return time.Time{}, err
	}
	for _, it := range page {
		at := time.UnixMilli(it.ev.At)
		if err := l.keep(ctx, p); err != nil {
			return at, err
		}
		ok, err := l.visible(ctx, tenant, e, it.ev)
		if err != nil {
			return at, err
		}
		if ok {
			done, err := l.deliver(ctx, tenant, e, key, it.ev, it.id)
			if err != nil || !done {
				return at, err
			}
		}
		if err := l.d.Cursors.SetTopicCursor(ctx, tenant, e.ID, st.name, it.id); err != nil {
			return at, fmt.Errorf("set the %s cursor to %d: %w", st.name, it.id, err)
		}
	}
	if len(page) == l.cfg.Batch {
		return time.UnixMilli(page[len(page)-1].ev.At), nil
	}
	return time.Time{}, nil
}

// visible is whether endpoint e receives ev of a recorded stream: a type it subscribed to and,
// for an endpoint bound to a bot, what the bot may see (docs/DESIGN.md issue-32 part 2 "Member,
// friendship and report events"): a friendship of its own, a report never (moderation is the
// operator's), the others when it may read their topic.
func (l *Loop) visible(ctx context.Context, tenant string, e webhook.Endpoint, ev webhook.Event) (bool, error) {
	switch {
	case !e.Subscribed(ev.Type):
		return false, nil
	case e.BotID == 0:
		return true, nil
	case ev.Type == webhook.ReportFiled:
		return false, nil
	case ev.Type == webhook.FriendshipChanged:
		pair, err := topic.Parse(ev.Topic)
		return err == nil && (pair.UserA == e.BotID || pair.UserB == e.BotID), nil
	}
	return l.readable(ctx, tenant, e, ev.Topic)
}

// latest is the later of a and b.
func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// start is the cursor of a topic new to the endpoint: the seq of its newest message created
// before from (its events begin after it), found by paging back from the newest, so the cost
// is the messages since from, never the topic's whole history (DESIGN issue-32 "Backlog from
// MySQL"). A topic all of whose kept messages are from then starts before its oldest one.
func (l *Loop) start(ctx context.Context, tenant, t string, from time.Time) (int64, error) {
	oldest := int64(0)
	for before := int64(0); ; {
		page, err := l.d.History.History(ctx, history.HistoryRequest{Tenant: tenant, Topic: t, Before: before, Limit: l.cfg.Batch})
		if err != nil {
			return 0, fmt.Errorf("find where %s begins for the endpoint: %w", t, err)
		}
		for _, m := range page {
			if m.CreatedAt.Before(from) {
				return m.Seq, nil
			}
			oldest = m.Seq
		}
		if len(page) < l.cfg.Batch || oldest <= 1 {
			return max(oldest-1, 0), nil
		}
		before = oldest
	}
}

// created is m's message.created event.
func created(tenant string, m message.Message) (webhook.Event, error) {
	data, err := json.Marshal(m)
	if err != nil {
		return webhook.Event{}, fmt.Errorf("encode %s seq %d: %w", m.Topic, m.Seq, err)
	}
	return webhook.Event{ID: webhook.EventID(m.Topic, m.Seq, webhook.MessageCreated), Type: webhook.MessageCreated, Tenant: tenant,
		Topic: m.Topic, Seq: m.Seq, At: m.CreatedAt.UnixMilli(), Data: data}, nil
}

// deliver sends ev once; done is true when its stream (a topic, the revisions) may move past
// it: a 2xx, or the last attempt failed and ev is now a dead letter. mark is the seq or
// record id the retry count is kept for.
func (l *Loop) deliver(ctx context.Context, tenant string, e webhook.Endpoint, key topicKey, ev webhook.Event, mark int64) (bool, error) {
	id := ev.ID
	body, err := json.Marshal(ev)
	if err != nil {
		return false, fmt.Errorf("encode event %s: %w", id, err)
	}
	// Signed as it leaves, not when the pass began: a receiver refuses a timestamp more than
	// 5 minutes old, and a long pass is longer than that.
	headers := map[string]string{webhook.SignatureHeader: webhook.Sign(e.Secret, l.d.Clock.Now(), body), webhook.EventIDHeader: id}
	status, err := l.d.Sender.Post(ctx, e.URL, headers, body)
	now := l.d.Clock.Now()
	if err == nil && status >= 200 && status < 300 {
		l.forget(key)
		l.d.Metrics.Inc("webhook_deliveries_total", "ok")
		return true, nil
	}
	failure := fmt.Sprintf("status %d", status)
	if err != nil {
		failure = err.Error()
	}
	r, _ := l.retryOf(key)
	if r.seq != mark {
		r = retry{seq: mark}
	}
	r.attempts++
	if r.attempts < l.cfg.MaxAttempts {
		r.next, r.pending = now.Add(l.backoff(r.attempts)), time.UnixMilli(ev.At)
		l.mu.Lock()
		l.retries[key] = r
		l.mu.Unlock()
		l.d.Metrics.Inc("webhook_deliveries_total", "retry")
		return false, nil
	}
	l.forget(key)
	d := webhook.DeadLetter{EndpointID: e.ID, Topic: ev.Topic, Seq: ev.Seq, Type: ev.Type, Attempts: r.attempts, LastError: failure, At: now}
	if err := l.d.Cursors.AddDeadLetter(ctx, tenant, d); err != nil {
		return false, fmt.Errorf("dead letter %s: %w", id, err)
	}
	l.d.Metrics.Inc("webhook_deliveries_total", "dead")
	l.d.Log.Warn("webhooks: event given up", "tenant", tenant, "endpoint", e.ID, "event", id, "attempts", r.attempts, "last", failure)
	return true, nil
}

// backoff doubles from FirstRetry up to MaxBackoff, the upper half jittered so endpoints that
// failed together do not retry together.
func (l *Loop) backoff(attempts int) time.Duration {
	d := l.cfg.FirstRetry
	for i := 1; i < attempts && d < l.cfg.MaxBackoff; i++ {
		d *= 2
	}
	d = min(d, l.cfg.MaxBackoff)
	return d/2 + rand.N(d/2+1)
}

func (l *Loop) retryOf(key topicKey) (retry, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r, ok := l.retries[key]
	return r, ok
}

func (l *Loop) forget(key topicKey) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.retries, key)
}

// RunEvery runs a pass over every tenant each interval until ctx ends; every node runs it and
// the tenant's lease leaves the delivery to one.
func (l *Loop) RunEvery(ctx context.Context, tenants func() []string, interval time.Duration) {
	periodic.EveryTenant(ctx, interval, tenants, func(ctx context.Context, tenant string) {
		if err := l.Pass(ctx, tenant); err != nil && ctx.Err() == nil {
			l.d.Log.WarnContext(ctx, "webhook pass failed", "tenant", tenant, "err", err)
		}
	})
}
