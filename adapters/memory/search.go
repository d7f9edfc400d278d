package memory

import (
	"context"
	"fmt"
	"iter"
	"maps"
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
	return search(maps.Values(table), q, func(message.Message) bool { return true }), nil
}

// search is the query's newest matches among the rows that also pass keep.
func search(rows iter.Seq[message.Message], q ports.SearchQuery, keep func(message.Message) bool) []message.Message {
	if q.Limit <= 0 {
		return nil
	}
	var out []message.Message
	for msg := range rows {
		if (q.Topic == "" || msg.Topic == q.Topic) && msg.Status == message.StatusNormal &&
			!msg.CreatedAt.Before(q.From) && msg.CreatedAt.Before(q.To) &&
			len(msg.Content) > 0 && strings.Contains(string(msg.Content), q.Text) && keep(msg) {
			out = append(out, msg)
		}
	}
	slices.SortFunc(out, message.NewestFirst)
	return clonedFirst(out, q.Limit)
}
