package memory

import (
	"context"
	"slices"
	"time"

	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/ports"
)

var _ ports.SeqHoles = (*MessageStore)(nil)

// HoleSuspects lists the topics whose mirror segment of m has fewer rows than seqs, or does
// not start right after the topic's previous segment.
func (s *MessageStore) HoleSuspects(_ context.Context, tenant string, m month.Month, after string, limit int) ([]string, error) {
	s.shards.mu.Lock()
	defer s.shards.mu.Unlock()
	var out []string
	for topic, months := range s.shards.db(tenant).mirror {
		seg, ok := months[m]
		if !ok || topic <= after {
			continue
		}
		follows := seg.MinSeq == 1
		for _, other := range months {
			follows = follows || other.MaxSeq == seg.MinSeq-1
		}
		if seg.Count < seg.MaxSeq-seg.MinSeq+1 || !follows {
			out = append(out, topic)
		}
	}
	slices.Sort(out)
	return out[:min(len(out), limit)], nil
}

// CloseHole stores the tombstone like Append stores a message, without a dedup record.
func (s *MessageStore) CloseHole(_ context.Context, tenant string, t message.Message) error {
	t = cloneMessage(t)
	t.Status, t.ClientMsgID, t.Content = message.StatusDeleted, "", nil
	t.CreatedAt = t.CreatedAt.UTC().Truncate(time.Millisecond)
	s.shards.mu.Lock()
	defer s.shards.mu.Unlock()
	d := s.shards.db(tenant)
	if err := d.writable(t); err != nil {
		return err
	}
	return d.put(t)
}
