package memory

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/imdhq/imd/core/domain/archive"
	"github.com/imdhq/imd/core/domain/delivery"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/ports"
)

var _ ports.DeliverBacklog = (*DeliverQueue)(nil)

// MonthBacklog counts the jobs of month m's messages in the tenant's lists, every partition
// count's included.
func (q *DeliverQueue) MonthBacklog(_ context.Context, tenant string, m month.Month) (archive.Backlog, error) {
	q.s.mu.Lock()
	defer q.s.mu.Unlock()
	l := q.s.of(tenant)
	var b archive.Backlog
	count := func(jobs []string, n *int64) error {
		for _, raw := range jobs {
			var job delivery.Job
			if err := json.Unmarshal([]byte(raw), &job); err != nil {
				return fmt.Errorf("decode deliver job: %w", err)
			}
			if job.Message != nil && job.Message.Month == m {
				*n++
			}
		}
		return nil
	}
	for _, jobs := range l.queues {
		if err := count(jobs, &b.Queued); err != nil {
			return archive.Backlog{}, err
		}
	}
	for _, jobs := range l.processing {
		if err := count(jobs, &b.Processing); err != nil {
			return archive.Backlog{}, err
		}
	}
	if err := count(l.dead, &b.Dead); err != nil {
		return archive.Backlog{}, err
	}
	return b, nil
}
