package memory

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/stats"
	"github.com/imdhq/imd/ports"
)

// Summaries reads the in-memory route mirror of a ShardStore and the size of a Directory, and
// keeps a daily summary of its own.
type Summaries struct {
	shards *ShardStore
	dir    *Directory

	mu   sync.Mutex
	days map[string]map[time.Time]stats.Day // tenant → UTC day → counts
}

var (
	_ ports.Summaries    = (*Summaries)(nil)
	_ ports.DailyCounter = (*Summaries)(nil)
)

// NewSummaries returns the statistics over shards and dir.
func NewSummaries(shards *ShardStore, dir *Directory) *Summaries {
	return &Summaries{shards: shards, dir: dir, days: make(map[string]map[time.Time]stats.Day)}
}

// MirrorMonths sums the route mirror per month.
func (s *Summaries) MirrorMonths(_ context.Context, tenant string) ([]stats.MirrorMonth, error) {
	s.shards.mu.Lock()
	defer s.shards.mu.Unlock()
	byMonth := make(map[month.Month]*stats.MirrorMonth)
	for topicName, months := range s.shards.db(tenant).mirror {
		for m, seg := range months {
			sum := byMonth[m]
			if sum == nil {
				sum = &stats.MirrorMonth{Month: m, FirstAt: seg.MinCreatedAt, LastAt: seg.MaxCreatedAt}
				byMonth[m] = sum
			}
			sum.Messages += seg.Count
			sum.Topics++
			if strings.HasPrefix(topicName, "grp_") {
				sum.GroupTopics++
			}
			if seg.MinCreatedAt.Before(sum.FirstAt) {
				sum.FirstAt = seg.MinCreatedAt
			}
			if seg.MaxCreatedAt.After(sum.LastAt) {
				sum.LastAt = seg.MaxCreatedAt
			}
		}
	}
	out := make([]stats.MirrorMonth, 0, len(byMonth))
	for _, sum := range byMonth {
		out = append(out, *sum)
	}
	slices.SortFunc(out, func(a, b stats.MirrorMonth) int { return cmp.Compare(a.Month, b.Month) })
	return out, nil
}

// Totals counts users and groups.
func (s *Summaries) Totals(_ context.Context, tenant string) (stats.Totals, error) {
	s.dir.mu.Lock()
	defer s.dir.mu.Unlock()
	g := s.dir.graph(tenant)
	return stats.Totals{Users: int64(len(g.users)), Groups: int64(len(g.groups))}, nil
}

// Days returns the newest limit days of the range, ascending.
func (s *Summaries) Days(_ context.Context, tenant string, from, to time.Time, limit int) ([]stats.Day, error) {
	if err := checkLimit(limit); err != nil {
		return nil, err
	}
	from, to = stats.DayOf(from), stats.DayOf(to)
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []stats.Day
	for day, d := range s.days[tenant] {
		if !day.Before(from) && !day.After(to) {
			out = append(out, d)
		}
	}
	slices.SortFunc(out, func(a, b stats.Day) int { return a.Day.Compare(b.Day) })
	return out[max(0, len(out)-limit):], nil
}

// AddDay adds d's counts to its day.
func (s *Summaries) AddDay(_ context.Context, tenant string, d stats.Day) error {
	day := stats.DayOf(d.Day)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.days[tenant] == nil {
		s.days[tenant] = make(map[time.Time]stats.Day)
	}
	sum := s.days[tenant][day]
	sum.Day = day
	sum.Messages += d.Messages
	sum.GroupMessages += d.GroupMessages
	sum.P2PMessages += d.P2PMessages
	s.days[tenant][day] = sum
	return nil
}
