package history

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/route"
	"github.com/imdhq/imd/core/domain/shard"
	"github.com/imdhq/imd/core/domain/topic"
	"github.com/imdhq/imd/ports"
)

// Search bounds (seed 000 §6.6: short-term search covers at most three months).
const (
	MaxSearchMonths = 3
	MaxSearchText   = 200 // bytes
)

// SearchRequest is an admin search of one tenant's messages by creation time.
type SearchRequest struct {
	Tenant string
	Topic  string // optional: one topic only
	Text   string // optional: a substring of the content
	// From ≤ created_at < To; required, within MaxSearchMonths calendar months (UTC).
	From, To time.Time
	Limit    int
}

// Search reads the month tables the time range touches, one by one, and merges them newest
// first (created_at, then seq, then msg_id). Only status normal messages match. The range may
// touch at most three calendar months, so a search reads at most three tables — except that a
// topic search also reads any month the topic's route says holds messages of that time (a month
// switched early by an operator, or a late write kept in its fixed month).
func (s *Service) Search(ctx context.Context, r SearchRequest) ([]message.Message, error) {
	limit, err := clampLimit(r.Limit)
	if err != nil {
		return nil, err
	}
	months, err := searchMonths(r.From, r.To)
	if err != nil {
		return nil, err
	}
	if r.Topic != "" {
		if _, err := topic.Parse(r.Topic); err != nil {
			return nil, apperr.New(apperr.InvalidArgument, "invalid topic")
		}
	}
	if len(r.Text) > MaxSearchText {
		return nil, apperr.New(apperr.InvalidArgument, fmt.Sprintf("search text exceeds %d bytes", MaxSearchText))
	}
	if s.d.Search == nil {
		return nil, apperr.New(apperr.Busy, "search unavailable")
	}
	st := newStats()
	defer s.observe(st)
	if r.Topic != "" {
		rt, err := s.route(ctx, &target{tenant: r.Tenant, topic: r.Topic}, anySeq)
		if err != nil {
			return nil, err
		}
		months = withSegmentsCreatedIn(months, rt, r.From, r.To)
	}
	q := ports.SearchQuery{Topic: r.Topic, Text: r.Text, From: r.From, To: r.To, Limit: limit}
	var out []message.Message
	for _, m := range months {
		got, err := s.d.Search.Search(ctx, r.Tenant, m, q)
		if errors.Is(err, shard.ErrMonthMissing) {
			continue // only months in the catalog have tables
		}
		st.touch(m)
		if err != nil {
			return nil, apperr.Wrap(apperr.Busy, "message storage unavailable", fmt.Errorf("search %s: %w", m, err))
		}
		out = append(out, got...)
	}
	slices.SortFunc(out, message.NewestFirst)
	out = slices.CompactFunc(out, func(a, b message.Message) bool { return a.MsgID == b.MsgID })
	return out[:min(len(out), limit)], nil
}

// searchMonths validates a search range and returns the months it touches, newest first.
func searchMonths(from, to time.Time) ([]month.Month, error) {
	if from.IsZero() || to.IsZero() {
		return nil, apperr.New(apperr.InvalidArgument, "from and to are required")
	}
	if !to.After(from) {
		return nil, apperr.New(apperr.InvalidArgument, "from must be before to")
	}
	first, last := month.Of(from), month.Of(to.Add(-time.Nanosecond))
	if !first.Valid() || !last.Valid() {
		return nil, apperr.New(apperr.InvalidArgument, "search range out of bounds")
	}
	var out []month.Month
	for m := last; m >= first; m = m.Prev() {
		if len(out) == MaxSearchMonths {
			return nil, apperr.New(apperr.InvalidArgument, fmt.Sprintf("search range must lie within %d calendar months", MaxSearchMonths))
		}
		out = append(out, m)
	}
	return out, nil
}

// withSegmentsCreatedIn adds the months whose segment of the route holds messages created in
// [from, to), keeping the newest-first order.
func withSegmentsCreatedIn(months []month.Month, rt route.Route, from, to time.Time) []month.Month {
	out := slices.Clone(months)
	for _, seg := range rt {
		known := !seg.MinCreatedAt.IsZero() && !seg.MaxCreatedAt.IsZero()
		if known && seg.MinCreatedAt.Before(to) && !seg.MaxCreatedAt.Before(from) && !slices.Contains(out, seg.Month) {
			out = append(out, seg.Month)
		}
	}
	slices.Sort(out)
	slices.Reverse(out)
	return out
}
