package memory

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/imdhq/imd/core/domain/msgref"
	"github.com/imdhq/imd/ports"
)

// Reactions is ports.Reactions and ports.Pins in memory.
type Reactions struct {
	mu        sync.Mutex
	reactions map[string]map[topicSeqKey][]msgref.Reaction // tenant → message → reactions, oldest first
	pins      map[string]map[string][]msgref.Pin           // tenant → topic → pins
}

var (
	_ ports.Reactions = (*Reactions)(nil)
	_ ports.Pins      = (*Reactions)(nil)
)

// NewReactions returns empty reaction and pin stores.
func NewReactions() *Reactions {
	return &Reactions{reactions: map[string]map[topicSeqKey][]msgref.Reaction{}, pins: map[string]map[string][]msgref.Pin{}}
}

func (s *Reactions) AddReaction(_ context.Context, tenant string, r msgref.Reaction, lim msgref.ReactionLimits) (msgref.ReactionOutcome, time.Time, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.reactions[tenant] == nil {
		s.reactions[tenant] = map[topicSeqKey][]msgref.Reaction{}
	}
	k := topicSeqKey{r.Topic, r.Seq}
	outcome, at := msgref.Admit(s.reactions[tenant][k], r, lim)
	if outcome == msgref.ReactionChanged {
		r.At = at
		s.reactions[tenant][k] = append(s.reactions[tenant][k], r)
	}
	return outcome, at, nil
}

func (s *Reactions) RemoveReaction(_ context.Context, tenant string, r msgref.Reaction) (msgref.ReactionOutcome, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := topicSeqKey{r.Topic, r.Seq}
	have := s.reactions[tenant][k]
	kept := slices.DeleteFunc(slices.Clone(have), func(h msgref.Reaction) bool { return h.Emoji == r.Emoji && h.User == r.User })
	if len(kept) == len(have) {
		return msgref.ReactionUnchanged, nil
	}
	s.reactions[tenant][k] = kept
	return msgref.ReactionChanged, nil
}

func (s *Reactions) ReactionSummaries(_ context.Context, tenant, topicName string, seqs []int64, viewer int64) (map[int64][]msgref.ReactionCount, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[int64][]msgref.ReactionCount{}
	for _, seq := range seqs {
		var sum []msgref.ReactionCount
		for _, r := range s.reactions[tenant][topicSeqKey{topicName, seq}] {
			i := slices.IndexFunc(sum, func(c msgref.ReactionCount) bool { return c.Emoji == r.Emoji })
			if i < 0 {
				i = len(sum)
				sum = append(sum, msgref.ReactionCount{Emoji: r.Emoji})
			}
			sum[i].Count++
			sum[i].Mine = sum[i].Mine || r.User == viewer
		}
		if len(sum) > 0 {
			out[seq] = sum
		}
	}
	return out, nil
}

func (s *Reactions) Reactors(_ context.Context, tenant, topicName string, seq int64, limit int) ([]msgref.Reaction, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	all := slices.Clone(s.reactions[tenant][topicSeqKey{topicName, seq}])
	slices.SortStableFunc(all, func(a, b msgref.Reaction) int {
		return cmp.Or(a.At.Compare(b.At), cmp.Compare(a.User, b.User), cmp.Compare(a.Emoji, b.Emoji))
	})
	return all[:min(len(all), limit)], nil
}

func (s *Reactions) AddPin(_ context.Context, tenant string, p msgref.Pin, max int) (msgref.Pin, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pins[tenant] == nil {
		s.pins[tenant] = map[string][]msgref.Pin{}
	}
	stored, added, err := msgref.AdmitPin(s.pins[tenant][p.Topic], p, max)
	if added {
		s.pins[tenant][p.Topic] = append(s.pins[tenant][p.Topic], stored)
	}
	return stored, added, err
}

func (s *Reactions) RemovePin(_ context.Context, tenant, topicName string, seq int64) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	have := s.pins[tenant][topicName]
	kept := slices.DeleteFunc(slices.Clone(have), func(p msgref.Pin) bool { return p.Seq == seq })
	if len(kept) == len(have) {
		return false, nil
	}
	s.pins[tenant][topicName] = kept
	return true, nil
}

func (s *Reactions) Pins(_ context.Context, tenant, topicName string) ([]msgref.Pin, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := slices.Clone(s.pins[tenant][topicName])
	slices.SortFunc(out, func(a, b msgref.Pin) int { return cmp.Or(b.At.Compare(a.At), cmp.Compare(b.Seq, a.Seq)) })
	return out, nil
}
