package memory

import (
	"cmp"
	"context"
	"slices"
	"strings"

	"imd/core/month"
	"imd/core/stats"
	"imd/ports"
)

// Summaries reads the in-memory route mirror of a ShardStore and the size of a Directory.
type Summaries struct {
	shards *ShardStore
	dir    *Directory
}

var _ ports.Summaries = (*Summaries)(nil)

// NewSummaries returns the statistics over shards and dir.
func NewSummaries(shards *ShardStore, dir *Directory) *Summaries {
	return &Summaries{shards: shards, dir: dir}
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
