// Package route selects the month tables a query must touch from a topic's month segments
// (seed 000 §3.3, §6): each segment is the seq range one topic has in one month table.
package route

import (
	"fmt"
	"slices"
	"time"

	"github.com/imdhq/imd/core/domain/month"
)

// Segment is the part of one topic stored in one month.
type Segment struct {
	Month        month.Month
	MinSeq       int64
	MaxSeq       int64
	Count        int64
	MinCreatedAt time.Time
	MaxCreatedAt time.Time
}

// Validate rejects a segment that would corrupt a route: an invalid month, an empty or
// inverted seq range, a negative count.
func (s Segment) Validate() error {
	switch {
	case !s.Month.Valid():
		return fmt.Errorf("%w: %d", month.ErrInvalid, s.Month)
	case s.MinSeq < 1 || s.MaxSeq < s.MinSeq:
		return fmt.Errorf("bad seq range [%d, %d] in %s", s.MinSeq, s.MaxSeq, s.Month)
	case s.Count < 0:
		return fmt.Errorf("negative count %d in %s", s.Count, s.Month)
	}
	return nil
}

// Route is a topic's segments in ascending MinSeq order.
type Route []Segment

// Grow is s with one more message (seq, created at): the route-mirror upsert of seed 000
// §5.2. A segment without messages (Count 0) becomes that message's alone; Month is kept.
func (s Segment) Grow(seq int64, createdAt time.Time) Segment {
	if s.Count == 0 {
		return Segment{Month: s.Month, MinSeq: seq, MaxSeq: seq, Count: 1, MinCreatedAt: createdAt, MaxCreatedAt: createdAt}
	}
	s.MinSeq, s.MaxSeq, s.Count = min(s.MinSeq, seq), max(s.MaxSeq, seq), s.Count+1
	if createdAt.Before(s.MinCreatedAt) {
		s.MinCreatedAt = createdAt
	}
	if createdAt.After(s.MaxCreatedAt) {
		s.MaxCreatedAt = createdAt
	}
	return s
}

// Validate rejects a route a cache must not store: a segment Segment.Validate rejects, or
// two segments of one month.
func (r Route) Validate() error {
	seen := make(map[month.Month]bool, len(r))
	for _, s := range r {
		if err := s.Validate(); err != nil {
			return err
		}
		if seen[s.Month] {
			return fmt.Errorf("month %s appears twice", s.Month)
		}
		seen[s.Month] = true
	}
	return nil
}

// Normalize sorts the segments by MinSeq, so callers may build a Route in any order.
func Normalize(segs []Segment) Route {
	r := slices.Clone(segs)
	slices.SortFunc(r, func(a, b Segment) int {
		if a.MinSeq != b.MinSeq {
			if a.MinSeq < b.MinSeq {
				return -1
			}
			return 1
		}
		return int(a.Month - b.Month)
	})
	return r
}

// Locate returns the month holding seq: the segment with the largest MinSeq ≤ seq, checked
// against its MaxSeq (seed 000 §6.4).
func (r Route) Locate(seq int64) (month.Month, bool) {
	i, _ := slices.BinarySearchFunc(r, seq, func(s Segment, target int64) int {
		if s.MinSeq <= target {
			return -1
		}
		return 1
	})
	if i == 0 {
		return 0, false
	}
	s := r[i-1]
	if s.MaxSeq < seq {
		return 0, false
	}
	return s.Month, true
}

// Before returns the months that may hold seqs < before, newest first (seed 000 §6.2).
// before ≤ 0 means "from the newest".
func (r Route) Before(before int64) []month.Month {
	var out []month.Month
	for i := len(r) - 1; i >= 0; i-- {
		if before <= 0 || r[i].MinSeq < before {
			out = append(out, r[i].Month)
		}
	}
	return out
}

// Since returns the months that may hold seqs > since, oldest first (seed 000 §6.3).
func (r Route) Since(since int64) []month.Month {
	var out []month.Month
	for _, s := range r {
		if s.MaxSeq > since {
			out = append(out, s.Month)
		}
	}
	return out
}

// Around returns the months that may hold seqs in [lo, hi], oldest first (context queries).
func (r Route) Around(lo, hi int64) []month.Month {
	var out []month.Month
	for _, s := range r {
		if s.MaxSeq >= lo && s.MinSeq <= hi {
			out = append(out, s.Month)
		}
	}
	return out
}

// MaxSeq is the highest stored seq of the topic, 0 when empty.
func (r Route) MaxSeq() int64 {
	var m int64
	for _, s := range r {
		m = max(m, s.MaxSeq)
	}
	return m
}

// GapWithin reports whether a seq in [lo, hi] lies between two segments of the route, where no
// month routes it. In the mirror such seqs are holes no send stored. In a cache they may also be
// a segment the cache lost: a Redis rollback (DESIGN §1.13) can drop a month's segment while a
// later send adds the next month's. Seqs below the first segment are no gap: a month's purge
// (seed 000 §3.3 rule 5) removes the oldest ones, and a cache that lost a topic's first
// segment lost the whole route, since a send never creates a missing one (RouteCache.Apply).
func (r Route) GapWithin(lo, hi int64) bool {
	for i := 1; i < len(r); i++ {
		from, to := r[i-1].MaxSeq+1, r[i].MinSeq-1
		if from <= to && from <= hi && to >= lo {
			return true
		}
	}
	return false
}

// Covers reports whether r routes every seq of other to other's month: each segment of other
// lies within r's segment of the same month. Counts and times may differ.
func (r Route) Covers(other Route) bool {
	for _, o := range other {
		i := slices.IndexFunc(r, func(s Segment) bool { return s.Month == o.Month })
		if i < 0 || r[i].MinSeq > o.MinSeq || r[i].MaxSeq < o.MaxSeq {
			return false
		}
	}
	return true
}

// Overlapping reports the first pair of segments whose seq ranges intersect; month segments
// of one topic must never overlap (seed 000 §12.15).
func (r Route) Overlapping() (a, b Segment, found bool) {
	for i := 1; i < len(r); i++ {
		if r[i].MinSeq <= r[i-1].MaxSeq {
			return r[i-1], r[i], true
		}
	}
	return Segment{}, Segment{}, false
}

// OutOfOrder reports whether a topic's seqs lo..hi in month m may not be stored beside other,
// its segment of another month: a topic's month segments never overlap and follow the months'
// order (seed 000 §2.2: seq only grows, across months too; seed 000 §12 item 15), so every seq of an
// earlier month is below lo and every seq of a later month above hi. A seq the write would put
// out of that order was handed out by a counter that stepped back (a Redis failover that lost
// it, DESIGN §1.13), even when no row holds it: it belongs below a seq already stored in an
// earlier month, or above one already stored in a later one.
func OutOfOrder(m month.Month, lo, hi int64, other Segment) bool {
	switch {
	case other.Month < m:
		return other.MaxSeq >= lo
	case other.Month > m:
		return other.MinSeq <= hi
	}
	return false
}

// Merge folds a written batch range into a route, the way the mirror upsert does in MySQL.
func (r Route) Merge(u Segment) Route {
	out := slices.Clone(r)
	for i := range out {
		if out[i].Month == u.Month {
			s := &out[i]
			s.MinSeq = min(s.MinSeq, u.MinSeq)
			s.MaxSeq = max(s.MaxSeq, u.MaxSeq)
			s.Count += u.Count
			if !u.MinCreatedAt.IsZero() && (s.MinCreatedAt.IsZero() || u.MinCreatedAt.Before(s.MinCreatedAt)) {
				s.MinCreatedAt = u.MinCreatedAt
			}
			if u.MaxCreatedAt.After(s.MaxCreatedAt) {
				s.MaxCreatedAt = u.MaxCreatedAt
			}
			return Normalize(out)
		}
	}
	return Normalize(append(out, u))
}
