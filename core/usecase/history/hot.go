package history

import (
	"context"

	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/route"
	"github.com/imdhq/imd/ports"
)

// hotSlack is read from the cache beyond the page, so a few messages the page leaves out
// (the viewer's deleted ranges, tombstones) do not send a read to MySQL.
const hotSlack = 8

// maxHotSeq is the largest seq the hot cache can hold (a Redis ZSET score is a double).
const maxHotSeq = int64(1) << 53

// fromCache answers a page from the hot cache only when the cache covers it whole (seed 000
// §6.1): every seq from the cursor to the page's last message is cached, and a page that ends
// short ends at the topic's newest seq (forward) or at seq 1 (backward). ok=false sends the
// read to the month tables.
//
// The topic's newest seq comes from the route, read before the cache. A message the route
// counts but the cache lacks makes a short page fall back; one that neither shows yet is missed
// only as a read a moment earlier would miss it.
func (s *Service) fromCache(ctx context.Context, p page, rt route.Route) ([]message.Message, bool) {
	if s.d.Hot == nil || len(rt) == 0 || p.cursor >= maxHotSeq || (p.viewer != 0 && s.d.Hidden == nil) {
		return nil, false
	}
	n := p.need + hotSlack
	var (
		got []message.Message
		err error
	)
	if p.desc {
		got, err = s.d.Hot.Before(ctx, p.tenant, p.topic, p.cursor, n)
	} else {
		// Read from the cursor itself: the cache must hold it to vouch for what follows.
		got, err = s.d.Hot.After(ctx, p.tenant, p.topic, max(p.cursor-1, 0), n+1)
	}
	if err != nil {
		s.d.Log.WarnContext(ctx, "hot cache unavailable, reading month tables", "topic", p.topic, "err", err)
		return nil, false
	}
	run, complete := coveredRun(got, p, rt.MaxSeq(), n)
	visible, err := s.visible(ctx, p, run)
	if err != nil {
		s.d.Log.WarnContext(ctx, "deleted ranges unavailable, reading month tables", "topic", p.topic, "err", err)
		return nil, false
	}
	if len(visible) >= p.need {
		return visible[:p.need], true
	}
	return visible, complete
}

// coveredRun returns the longest run of got that continues the cursor without a gap, and
// whether that run reaches the end of the topic in the page's direction. got is what the cache
// returned for the page: for a forward page n+1 entries at most, from the cursor itself (which
// is dropped) when the cursor is a seq; for a backward page n entries at most, below the cursor.
func coveredRun(got []message.Message, p page, newest int64, n int) (run []message.Message, complete bool) {
	if !p.desc {
		exhausted := len(got) < n+1 // the cache holds nothing past what it returned
		if p.cursor > 0 {
			if len(got) == 0 || got[0].Seq != p.cursor {
				return nil, false // the cache does not reach back to the cursor
			}
			got = got[1:]
		}
		next := p.cursor + 1
		i := 0
		for i < len(got) && got[i].Seq == next {
			i, next = i+1, next+1
		}
		return got[:i], i == len(got) && exhausted && next-1 >= newest
	}
	if p.cursor == 0 && len(got) == 0 {
		return nil, false // the topic has messages, the cache none
	}
	next := p.cursor - 1
	if len(got) > 0 && (p.cursor == 0 || got[0].Seq < next) {
		if got[0].Seq < newest {
			return nil, false // seqs between the cache's top and the newest are not cached
		}
		next = got[0].Seq
	}
	i := 0
	for i < len(got) && got[i].Seq == next {
		i, next = i+1, next-1
	}
	return got[:i], i == len(got) && next < 1
}

// visible drops from a cached run what the month-table query would not return: the viewer's
// deleted ranges (im_dellog, [low, hi)) and, unless the page wants them, tombstones.
func (s *Service) visible(ctx context.Context, p page, run []message.Message) ([]message.Message, error) {
	var hidden []ports.SeqRange
	if p.viewer != 0 && len(run) > 0 {
		lo, hi := run[0].Seq, run[len(run)-1].Seq
		var err error
		if hidden, err = s.d.Hidden.HiddenRanges(ctx, p.tenant, p.topic, p.viewer, min(lo, hi), max(lo, hi)); err != nil {
			return nil, err
		}
	}
	out := make([]message.Message, 0, len(run))
	for _, m := range run {
		if (p.tombstones || m.Status != message.StatusDeleted) && !inRanges(m.Seq, hidden) {
			out = append(out, m)
		}
	}
	return out, nil
}

func inRanges(seq int64, ranges []ports.SeqRange) bool {
	for _, r := range ranges {
		if seq >= r.Low && seq < r.Hi {
			return true
		}
	}
	return false
}
