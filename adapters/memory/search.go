package memory

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/ports"
)

var _ ports.MessageSearch = (*MessageStore)(nil)

// Search reads one month table for a search, matching text as a case-sensitive substring of
// the content like the MySQL LIKE on a utf8mb4_bin JSON column.
func (s *MessageStore) Search(_ context.Context, tenant string, m month.Month, q ports.SearchQuery) ([]message.Message, error) {
	s.shards.mu.Lock()
	defer s.shards.mu.Unlock()
	table, err := s.shards.db(tenant).table(m)
	if err != nil {
		return nil, fmt.Errorf("search %s: %w", m, err)
	}
	if q.Limit <= 0 {
		return nil, nil
	}
	var out []message.Message
	for k, msg := range table {
		if (q.Topic == "" || k.topic == q.Topic) && msg.Status == message.StatusNormal &&
			!msg.CreatedAt.Before(q.From) && msg.CreatedAt.Before(q.To) &&
			len(msg.Content) > 0 && strings.Contains(string(msg.Content), q.Text) {
			out = append(out, msg)
		}
	}
	slices.SortFunc(out, func(a, b message.Message) int {
		return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), cmp.Compare(b.Seq, a.Seq), cmp.Compare(b.MsgID, a.MsgID))
	})
	out = out[:min(len(out), q.Limit)]
	for i := range out {
		out[i] = cloneMessage(out[i])
	}
	return out, nil
}
