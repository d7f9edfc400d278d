package dualread

import (
	"cmp"
	"slices"

	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/route"
)

type topicSeq struct {
	topic string
	seq   int64
}

// union keeps every month-table message and the legacy messages whose (topic, seq) the month
// table did not answer: the month table holds the copy, and any change made through imd since.
func union(cur, old []message.Message) []message.Message {
	seen := make(map[topicSeq]bool, len(cur))
	out := make([]message.Message, 0, len(cur)+len(old))
	for _, m := range cur {
		seen[topicSeq{m.Topic, m.Seq}] = true
		out = append(out, m)
	}
	for _, m := range old {
		if !seen[topicSeq{m.Topic, m.Seq}] {
			out = append(out, m)
		}
	}
	return out
}

// mergeSeq merges two pages of one topic and direction, each the first limit of its source, into
// the first limit of their union: whatever the union's first limit are, each was among the first
// limit of its own source.
func mergeSeq(cur, old []message.Message, desc bool, limit int) []message.Message {
	if len(old) == 0 {
		return cur
	}
	out := union(cur, old)
	slices.SortFunc(out, func(a, b message.Message) int {
		if desc {
			return cmp.Compare(b.Seq, a.Seq)
		}
		return cmp.Compare(a.Seq, b.Seq)
	})
	return out[:min(len(out), max(limit, 0))]
}

// mergeRoutes adds the legacy segments to the mirror's, month by month. A month in both has the
// wider seq and time range. Its count is the larger of the two: exact once the month is copied
// (the mirror then counts the copied rows too), and at most the legacy rows short before — route
// counts are informational, only the seq ranges route reads.
func mergeRoutes(mirror, old route.Route) route.Route {
	if len(old) == 0 {
		return mirror
	}
	byMonth := make(map[month.Month]route.Segment, len(mirror)+len(old))
	for _, s := range mirror {
		byMonth[s.Month] = s
	}
	for _, o := range old {
		s, ok := byMonth[o.Month]
		if !ok {
			byMonth[o.Month] = o
			continue
		}
		s.MinSeq, s.MaxSeq, s.Count = min(s.MinSeq, o.MinSeq), max(s.MaxSeq, o.MaxSeq), max(s.Count, o.Count)
		if !o.MinCreatedAt.IsZero() && (s.MinCreatedAt.IsZero() || o.MinCreatedAt.Before(s.MinCreatedAt)) {
			s.MinCreatedAt = o.MinCreatedAt
		}
		if o.MaxCreatedAt.After(s.MaxCreatedAt) {
			s.MaxCreatedAt = o.MaxCreatedAt
		}
		byMonth[o.Month] = s
	}
	segs := make([]route.Segment, 0, len(byMonth))
	for _, s := range byMonth {
		segs = append(segs, s)
	}
	return route.Normalize(segs)
}
