package route

import (
	"time"

	"github.com/imdhq/imd/core/domain/month"
)

// Mirror is the route mirror of a set of rows (t_topic_routes): each topic's segment in each
// month. A store that keeps rows in memory grows it row by row as the writer's upsert does, and
// the legacy inventory is one taken of the legacy table at the cutover.
type Mirror map[string]map[month.Month]Segment

// Grow counts the row (topic, seq) created at createdAt into its segment of month m.
func (mi Mirror) Grow(topic string, m month.Month, seq int64, createdAt time.Time) {
	months, ok := mi[topic]
	if !ok {
		months = make(map[month.Month]Segment)
		mi[topic] = months
	}
	s := months[m]
	s.Month = m
	months[m] = s.Grow(seq, createdAt)
}

// Route is the topic's segments; empty, not nil, for a topic without rows.
func (mi Mirror) Route(topic string) Route {
	segs := make([]Segment, 0, len(mi[topic]))
	for _, s := range mi[topic] {
		segs = append(segs, s)
	}
	return Normalize(segs)
}
