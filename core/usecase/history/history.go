// Package history reads a topic across month tables (seed 000 §6): forward catch-up by seq,
// reverse paging, exact lookup, context around a seq and short-term search. Pages come from
// the Redis hot cache when it covers them whole, else from the month tables the topic's route
// names; a missing Redis route is rebuilt from the MySQL mirror, and a topic neither knows is
// read from a few recent months only, never by scanning every table.
package history

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"

	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/route"
	"github.com/imdhq/imd/core/domain/shard"
	"github.com/imdhq/imd/core/domain/topic"
	"github.com/imdhq/imd/core/usecase/conversation"
	"github.com/imdhq/imd/ports"
)

// Page size limits (PROTOCOL §3: SYNC_MESSAGES limit ≤ 200).
const (
	DefaultLimit = 50
	MaxLimit     = 200
)

// DefaultRecentMonths is how many months, the active one included, a query reads for a topic
// that has neither a Redis route nor a mirror row (seed 000 §6.4).
const DefaultRecentMonths = 3

// Deps are the ports history reads through.
type Deps struct {
	Store    ports.MessageStore
	Routes   ports.RouteFiller
	Months   ports.MonthState
	Metrics  ports.Metrics
	Resolver *conversation.Resolver
	Log      *slog.Logger
	// Hot is the Redis hot-message cache; nil reads the month tables only.
	Hot ports.HotCache
	// Hidden lets cached pages hide a viewer's deleted ranges; nil keeps user reads off the
	// cache (admin reads hide nothing and still use it).
	Hidden ports.HiddenRanges
	// Search reads month tables for Search; nil makes Search answer 50301.
	Search ports.MessageSearch
	// Repairs queues a route rebuild for a topic that has neither a Redis route nor a mirror
	// row; nil queues nothing.
	Repairs ports.RouteRepairs
	// RecentMonths overrides DefaultRecentMonths when positive.
	RecentMonths int
}

// Service answers message queries.
type Service struct{ d Deps }

// New returns the history service.
func New(d Deps) *Service {
	if d.RecentMonths <= 0 {
		d.RecentMonths = DefaultRecentMonths
	}
	return &Service{d: d}
}

// SyncRequest is SYNC_MESSAGES: messages with seq > Since, ascending.
type SyncRequest struct {
	Tenant string
	User   int64 // 0 for admin reads (no membership check, no dellog)
	Topic  string
	Since  int64
	Limit  int
}

// SyncResult is one page of a catch-up.
type SyncResult struct {
	Messages []message.Message
	LastSeq  int64 // the seq to continue from
	HasMore  bool
}

// HistoryRequest is GET_HISTORY: messages with seq < Before (0: newest), descending.
type HistoryRequest struct {
	Tenant string
	User   int64
	Topic  string
	Before int64
	Limit  int
}

func clampLimit(limit int) (int, error) {
	switch {
	case limit == 0:
		return DefaultLimit, nil
	case limit < 0 || limit > MaxLimit:
		return 0, apperr.New(apperr.InvalidArgument, "limit must be 1-200")
	}
	return limit, nil
}

// Sync pages forward from Since across months, merged by seq (seed 000 §6.3). Tombstones are
// returned (status deleted) so a client never mistakes a closed seq for a gap.
func (s *Service) Sync(ctx context.Context, r SyncRequest) (SyncResult, error) {
	limit, err := clampLimit(r.Limit)
	if err != nil {
		return SyncResult{}, err
	}
	if r.Since < 0 {
		return SyncResult{}, apperr.New(apperr.InvalidArgument, "since_seq must not be negative")
	}
	if err := s.authorize(ctx, r.Tenant, r.User, r.Topic); err != nil {
		return SyncResult{}, err
	}
	st := newStats()
	defer s.observe(st)
	tg := &target{tenant: r.Tenant, topic: r.Topic}
	rt, err := s.route(ctx, tg, seqSpan{r.Since + 1, math.MaxInt64})
	if err != nil {
		return SyncResult{}, err
	}
	// One more than the page tells whether more follows.
	p := page{target: tg, viewer: r.User, cursor: r.Since, need: limit + 1, tombstones: true}
	out, err := s.read(ctx, p, rt, st)
	if err != nil {
		return SyncResult{}, err
	}
	res := SyncResult{LastSeq: r.Since}
	if len(out) > limit {
		out, res.HasMore = out[:limit], true
	}
	res.Messages = out
	if len(out) > 0 {
		res.LastSeq = out[len(out)-1].Seq
	}
	s.d.Metrics.Inc("message_sync_total")
	return res, nil
}

// History pages backward from Before across months (seed 000 §6.2); the next cursor is the
// smallest seq of the page. Deleted messages are left out.
func (s *Service) History(ctx context.Context, r HistoryRequest) ([]message.Message, error) {
	limit, err := clampLimit(r.Limit)
	if err != nil {
		return nil, err
	}
	if r.Before < 0 {
		return nil, apperr.New(apperr.InvalidArgument, "before_seq must not be negative")
	}
	if err := s.authorize(ctx, r.Tenant, r.User, r.Topic); err != nil {
		return nil, err
	}
	st := newStats()
	defer s.observe(st)
	below := seqSpan{1, math.MaxInt64}
	if r.Before > 0 {
		below.hi = r.Before - 1
	}
	tg := &target{tenant: r.Tenant, topic: r.Topic}
	rt, err := s.route(ctx, tg, below)
	if err != nil {
		return nil, err
	}
	p := page{target: tg, viewer: r.User, cursor: r.Before, need: limit, desc: true}
	return s.read(ctx, p, rt, st)
}

// Fetch is Get as an admin (no viewer): what the search index reads a committed message with.
func (s *Service) Fetch(ctx context.Context, tenant, topic string, seq int64) (message.Message, error) {
	return s.Get(ctx, tenant, 0, topic, seq)
}

// Get locates one message by topic+seq (seed 000 §6.4).
func (s *Service) Get(ctx context.Context, tenant string, user int64, topic string, seq int64) (message.Message, error) {
	if seq <= 0 {
		return message.Message{}, apperr.New(apperr.InvalidArgument, "seq must be positive")
	}
	if err := s.authorize(ctx, tenant, user, topic); err != nil {
		return message.Message{}, err
	}
	st := newStats()
	defer s.observe(st)
	m, err := s.locate(ctx, &target{tenant: tenant, topic: topic}, seq, st)
	if err != nil {
		return message.Message{}, err
	}
	st.touch(m)
	msg, err := s.d.Store.Get(ctx, tenant, m, topic, seq)
	if err != nil {
		if apperr.CodeOf(err) == apperr.NotFound {
			return message.Message{}, err
		}
		return message.Message{}, apperr.Wrap(apperr.Busy, "message storage unavailable", err)
	}
	return msg, nil
}

// Locate returns the month whose table holds seq of topic, by the route (seed 000 §6.4); it
// checks no permission. message.ErrNotFound when no month can hold it.
func (s *Service) Locate(ctx context.Context, tenant, topic string, seq int64) (month.Month, error) {
	return s.locate(ctx, &target{tenant: tenant, topic: topic}, seq, newStats())
}

func (s *Service) locate(ctx context.Context, tg *target, seq int64, st *stats) (month.Month, error) {
	rt, err := s.route(ctx, tg, seqSpan{seq, seq})
	if err != nil {
		return 0, err
	}
	if m, ok := rt.Locate(seq); ok {
		return m, nil
	}
	// A stale Redis route may not know the newest month yet, and an unrouted topic may be in
	// any recent month: look the seq up in each month that may hold it, newest first.
	pl, err := s.plan(ctx, tg, rt, nil, true, true)
	if err != nil {
		return 0, err
	}
	for _, m := range pl.months {
		_, err := s.d.Store.Get(ctx, tg.tenant, m, tg.topic, seq)
		switch {
		case err == nil:
			return m, nil
		case pl.speculative[m] && errors.Is(err, shard.ErrMonthMissing):
			continue
		}
		st.touch(m)
		if apperr.CodeOf(err) != apperr.NotFound {
			return 0, apperr.Wrap(apperr.Busy, "message storage unavailable", fmt.Errorf("locate %s seq %d in %s: %w", tg.topic, seq, m, err))
		}
	}
	return 0, message.ErrNotFound
}

// authorize checks the topic name always, and membership for user reads (user 0 is an admin).
func (s *Service) authorize(ctx context.Context, tenant string, user int64, name string) error {
	if _, err := topic.Parse(name); err != nil {
		return apperr.New(apperr.InvalidArgument, "invalid topic")
	}
	if user == 0 {
		return nil
	}
	_, err := s.d.Resolver.ForRead(ctx, tenant, user, conversation.Address{Topic: name})
	return err
}

// seqSpan is the seqs of a topic a read may return, both ends included.
type seqSpan struct{ lo, hi int64 }

// anySeq is the span of a read that may return any seq of the topic.
var anySeq = seqSpan{1, math.MaxInt64}

// target is the topic one request reads, and what the request learned of its route mirror:
// MySQL is asked for the mirror at most once a request, however many of its steps consult it
// (a missing Redis route, a gap in one, the months behind the active one, each side of a
// context read). A later read could only add seqs newer than every seq the request returns.
type target struct {
	tenant, topic string
	mirrorRead    bool
	mirror        route.Route
	mirrorErr     error
}

// mirror returns the topic's route mirror, read on the request's first call.
func (s *Service) mirror(ctx context.Context, tg *target) (route.Route, error) {
	if !tg.mirrorRead {
		tg.mirror, tg.mirrorErr = s.d.Store.Segments(ctx, tg.tenant, tg.topic)
		tg.mirrorRead = true
	}
	return tg.mirror, tg.mirrorErr
}

// route returns the topic's month segments for a read of the seqs in span: Redis first, else
// the MySQL mirror, which is then written back to Redis unless a route appeared there meanwhile
// (seed 000 §3.4 rule 3). A topic the mirror does not know either gets an empty route and a
// repair request. A Redis route with a gap between two segments inside span is checked against
// the mirror first (acrossGap).
func (s *Service) route(ctx context.Context, tg *target, span seqSpan) (route.Route, error) {
	rt, found, err := s.d.Routes.Segments(ctx, tg.tenant, tg.topic)
	if err == nil && found {
		if rt.GapWithin(span.lo, span.hi) {
			return s.acrossGap(ctx, tg, rt), nil
		}
		return rt, nil
	}
	if err != nil {
		s.d.Log.WarnContext(ctx, "redis route unavailable, reading mirror", "topic", tg.topic, "err", err)
	}
	s.d.Metrics.Inc("group_message_route_miss_total")
	rt, err = s.mirror(ctx, tg)
	if err != nil {
		s.d.Metrics.Inc("group_message_route_rebuild_total", "failed")
		return nil, apperr.Wrap(apperr.Busy, "message route unavailable", err)
	}
	if len(rt) == 0 {
		s.requestRepair(ctx, tg.tenant, tg.topic)
		return nil, nil
	}
	// A plain overwrite could put back a mirror snapshot older than a route another reader
	// rebuilt and later sends extended.
	written, err := s.d.Routes.ReplaceIfMissing(ctx, tg.tenant, tg.topic, rt)
	switch {
	case err != nil:
		s.d.Metrics.Inc("group_message_route_rebuild_total", "failed")
	case written:
		s.d.Metrics.Inc("group_message_route_rebuild_total", "ok")
	}
	return rt, nil
}

// acrossGap is the route for a read that crosses a gap between two segments of the cached
// one. Such a gap is seqs no send stored (holes the sweeper closes, in the mirror first), or a
// segment Redis lost in a rollback while a later send added the next month's (DESIGN §1.13):
// read by the cached route, a sync would skip that month's messages for good, since nothing
// else makes the cache route them. Only the mirror tells the two apart. It is read after the
// cache, so it routes every seq the cache does; where it routes more, the read follows it and
// the cached route is queued for a rebuild. Unreadable, the cached route is the best there is.
func (s *Service) acrossGap(ctx context.Context, tg *target, cached route.Route) route.Route {
	mirror, err := s.mirror(ctx, tg)
	if err != nil {
		s.d.Log.WarnContext(ctx, "route mirror unavailable, reading across a gap of the redis route", "topic", tg.topic, "err", err)
		return cached
	}
	if cached.Covers(mirror) {
		return cached
	}
	s.d.Metrics.Inc("group_message_route_miss_total")
	s.d.Log.WarnContext(ctx, "redis route misses seqs the mirror routes, rebuilding it", "topic", tg.topic)
	s.requestRepair(ctx, tg.tenant, tg.topic)
	return mirror
}

// requestRepair queues a route rebuild; losing the request costs only a later rebuild, so a
// failure is logged, never returned.
func (s *Service) requestRepair(ctx context.Context, tenant, topic string) {
	if s.d.Repairs == nil {
		return
	}
	if err := s.d.Repairs.Enqueue(ctx, tenant, topic); err != nil {
		s.d.Log.WarnContext(ctx, "route repair request failed", "topic", topic, "err", err)
	}
}
