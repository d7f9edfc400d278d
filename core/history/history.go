// Package history reads a topic across month tables (seed 000 §6): forward catch-up by seq,
// reverse paging, and exact lookup. The month tables come from the topic's route; a missing
// Redis route is rebuilt from the MySQL mirror, never found by scanning every table.
package history

import (
	"context"
	"fmt"
	"log/slog"
	"slices"

	"imd/core/apperr"
	"imd/core/conversation"
	"imd/core/message"
	"imd/core/month"
	"imd/core/route"
	"imd/core/topic"
	"imd/ports"
)

// Page size limits (PROTOCOL §3: SYNC_MESSAGES limit ≤ 200).
const (
	DefaultLimit = 50
	MaxLimit     = 200
)

// Deps are the ports history reads through.
type Deps struct {
	Store    ports.MessageStore
	Routes   ports.RouteCache
	Months   ports.MonthState
	Metrics  ports.Metrics
	Resolver *conversation.Resolver
	Log      *slog.Logger
}

// Service answers message queries.
type Service struct{ d Deps }

// New returns the history service.
func New(d Deps) *Service { return &Service{d: d} }

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
	rt, err := s.route(ctx, r.Tenant, r.Topic)
	if err != nil {
		return SyncResult{}, err
	}
	var out []message.Message
	tables := 0
	for _, m := range s.withUnrouted(ctx, r.Tenant, rt, rt.Since(r.Since), false) {
		tables++
		page, err := s.d.Store.Page(ctx, r.Tenant, m, message.PageQuery{
			Topic: r.Topic, After: r.Since, Limit: limit + 1 - len(out), Viewer: r.User, IncludeDeleted: true,
		})
		if err != nil {
			return SyncResult{}, apperr.Wrap(apperr.Busy, "message storage unavailable", fmt.Errorf("page %s of %s: %w", m, r.Topic, err))
		}
		out = mergeAsc(out, page)
		if len(out) > limit {
			break
		}
	}
	s.d.Metrics.Observe("group_message_query_tables", float64(tables))
	res := SyncResult{LastSeq: r.Since}
	if len(out) > limit {
		out, res.HasMore = out[:limit], true
	}
	res.Messages = out
	if len(out) > 0 {
		res.LastSeq = out[len(out)-1].Seq
	}
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
	rt, err := s.route(ctx, r.Tenant, r.Topic)
	if err != nil {
		return nil, err
	}
	var out []message.Message
	tables := 0
	for _, m := range s.withUnrouted(ctx, r.Tenant, rt, rt.Before(r.Before), true) {
		tables++
		page, err := s.d.Store.Page(ctx, r.Tenant, m, message.PageQuery{
			Topic: r.Topic, Before: r.Before, Limit: limit - len(out), Desc: true, Viewer: r.User,
		})
		if err != nil {
			return nil, apperr.Wrap(apperr.Busy, "message storage unavailable", fmt.Errorf("page %s of %s: %w", m, r.Topic, err))
		}
		out = mergeDesc(out, page)
		if len(out) >= limit {
			break
		}
	}
	s.d.Metrics.Observe("group_message_query_tables", float64(tables))
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// Get locates one message by topic+seq (seed 000 §6.4).
func (s *Service) Get(ctx context.Context, tenant string, user int64, topic string, seq int64) (message.Message, error) {
	if seq <= 0 {
		return message.Message{}, apperr.New(apperr.InvalidArgument, "seq must be positive")
	}
	if err := s.authorize(ctx, tenant, user, topic); err != nil {
		return message.Message{}, err
	}
	rt, err := s.route(ctx, tenant, topic)
	if err != nil {
		return message.Message{}, err
	}
	m, ok := rt.Locate(seq)
	if !ok {
		// A stale Redis route may not know the newest month yet.
		months := s.withUnrouted(ctx, tenant, rt, nil, true)
		if len(months) == 0 {
			return message.Message{}, message.ErrNotFound
		}
		m = months[0]
	}
	msg, err := s.d.Store.Get(ctx, tenant, m, topic, seq)
	if err != nil {
		if apperr.CodeOf(err) == apperr.NotFound {
			return message.Message{}, err
		}
		return message.Message{}, apperr.Wrap(apperr.Busy, "message storage unavailable", err)
	}
	return msg, nil
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

// route returns the topic's month segments: Redis first, else the MySQL mirror, which is then
// written back to Redis (seed 000 §3.4 rule 3).
func (s *Service) route(ctx context.Context, tenant, topic string) (route.Route, error) {
	rt, found, err := s.d.Routes.Segments(ctx, tenant, topic)
	if err == nil && found {
		return rt, nil
	}
	if err != nil {
		s.d.Log.WarnContext(ctx, "redis route unavailable, reading mirror", "topic", topic, "err", err)
	}
	s.d.Metrics.Inc("group_message_route_miss_total")
	rt, err = s.d.Store.Segments(ctx, tenant, topic)
	if err != nil {
		s.d.Metrics.Inc("group_message_route_rebuild_total", "failed")
		return nil, apperr.Wrap(apperr.Busy, "message route unavailable", err)
	}
	if len(rt) > 0 {
		if err := s.d.Routes.Replace(ctx, tenant, topic, rt); err != nil {
			s.d.Metrics.Inc("group_message_route_rebuild_total", "failed")
		} else {
			s.d.Metrics.Inc("group_message_route_rebuild_total", "ok")
		}
	}
	return rt, nil
}

// withUnrouted adds the months after the route's newest segment up to the active month, since
// a route update that failed after COMMIT must not hide the newest messages; the range is
// bounded by the active month, never a scan of all tables.
func (s *Service) withUnrouted(ctx context.Context, tenant string, rt route.Route, months []month.Month, newestFirst bool) []month.Month {
	active, found, err := s.d.Months.Active(ctx, tenant)
	if err != nil || !found {
		return months
	}
	var newest month.Month
	for _, seg := range rt {
		newest = max(newest, seg.Month)
	}
	var extra []month.Month
	if newest == 0 {
		extra = append(extra, active)
	} else if newest < active {
		for m := newest; m < active && len(extra) < 3; {
			m = m.Next()
			extra = append(extra, m)
		}
	}
	if len(rt) > 0 && !slices.Contains(months, newest) {
		extra = append(extra, newest)
	}
	all := append(slices.Clone(months), extra...)
	slices.Sort(all)
	all = slices.Compact(all)
	if newestFirst {
		slices.Reverse(all)
	}
	return all
}

// mergeAsc merges two ascending pages by seq, dropping duplicates.
func mergeAsc(a, b []message.Message) []message.Message {
	out := append(a, b...)
	slices.SortFunc(out, func(x, y message.Message) int { return cmpSeq(x.Seq, y.Seq) })
	return slices.CompactFunc(out, func(x, y message.Message) bool { return x.Seq == y.Seq })
}

// mergeDesc merges two descending pages by seq, dropping duplicates.
func mergeDesc(a, b []message.Message) []message.Message {
	out := append(a, b...)
	slices.SortFunc(out, func(x, y message.Message) int { return cmpSeq(y.Seq, x.Seq) })
	return slices.CompactFunc(out, func(x, y message.Message) bool { return x.Seq == y.Seq })
}

func cmpSeq(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
