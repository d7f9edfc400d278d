package routerepair

import (
	"context"
	"fmt"
	"slices"
)

// Backlog is what waits for a route repair: tickets in the shared queue and topics this process
// keeps while the queue refused them.
type Backlog struct {
	Queued    int64
	InProcess int
	// Topics are some of the waiting topics (the in-process ones first), for operators to see.
	Topics []string
}

// Backlog reads the tenant's waiting repairs, listing up to limit topics.
func (s *Service) Backlog(ctx context.Context, tenant string, limit int) (Backlog, error) {
	local := s.fallbackTopics(tenant)
	slices.Sort(local)
	b := Backlog{InProcess: len(local), Topics: local[:min(len(local), max(limit, 0))]}
	n, err := s.d.Queue.Len(ctx, tenant)
	if err != nil {
		return b, fmt.Errorf("route repair backlog of %s: %w", tenant, err)
	}
	b.Queued = n
	if rest := limit - len(b.Topics); rest > 0 {
		tickets, err := s.d.Queue.Pending(ctx, tenant, rest)
		if err != nil {
			return b, fmt.Errorf("pending route repairs of %s: %w", tenant, err)
		}
		for _, t := range tickets {
			b.Topics = append(b.Topics, t.Topic)
		}
	}
	return b, nil
}
