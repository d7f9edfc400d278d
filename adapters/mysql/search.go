package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"strings"

	"github.com/imdhq/imd/adapters/mysql/sqlcdb"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/ports"
)

var _ ports.MessageSearch = (*MessageStore)(nil)

// likeEscaper escapes the LIKE wildcards of user text with '!', the ESCAPE character of the
// search queries ('!' rather than a backslash, which string literals would also interpret).
var likeEscaper = strings.NewReplacer("!", "!!", "%", "!%", "_", "!_")

// Search reads one month table for a search (see ports.MessageSearch).
func (s *MessageStore) Search(ctx context.Context, tenant string, m month.Month, q ports.SearchQuery) ([]message.Message, error) {
	t, err := s.cluster.tenant(tenant)
	if err != nil {
		return nil, err
	}
	table, err := t.months.on(ctx, t.db, m)
	if err != nil {
		return nil, fmt.Errorf("search %s: %w", m, err)
	}
	if q.Limit <= 0 {
		return nil, nil
	}
	pattern := sql.NullString{String: "%" + likeEscaper.Replace(q.Text) + "%", Valid: true}
	from, to := q.From.UTC(), q.To.UTC()
	limit := int32(min(q.Limit, math.MaxInt32))
	mq := sqlcdb.New(table)
	var rows []sqlcdb.ImGroupMessagesTpl
	if q.Topic != "" {
		rows, err = mq.SearchTopicMonth(ctx, sqlcdb.SearchTopicMonthParams{
			Topic: q.Topic, FromTime: from, ToTime: to, Pattern: pattern, Limit: limit,
		})
	} else {
		rows, err = mq.SearchMonth(ctx, sqlcdb.SearchMonthParams{FromTime: from, ToTime: to, Pattern: pattern, Limit: limit})
	}
	if err != nil {
		return nil, fmt.Errorf("search %s: %w", m, err)
	}
	return fromRows(rows, m)
}
