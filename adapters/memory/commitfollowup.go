package memory

import (
	"context"

	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/ports"
)

// CommitFollowUp is ports.CommitFollowUp as the separate calls of the fakes it is built on, in
// the order the Redis script runs its parts: the job first, the acked mark and the settling
// only once it is queued. A nil Hot is no hot cache: its part is a no-op.
type CommitFollowUp struct {
	Routes  ports.RouteCache
	Hot     HotWriter
	Queue   ports.DeliverQueue
	Seqs    *SeqAllocator
	Pending ports.PendingSeqs
}

// HotWriter is what the hot part writes through: a HotCache, or a test's stand-in that fails.
type HotWriter interface {
	Put(ctx context.Context, tenant string, m message.Message) error
}

var _ ports.CommitFollowUp = (*CommitFollowUp)(nil)

// Apply writes f's parts; see ports.CommitFollowUp.
func (c *CommitFollowUp) Apply(ctx context.Context, tenant string, f ports.FollowUp) ports.FollowUpResult {
	var r ports.FollowUpResult
	if f.Job != nil {
		job := *f.Job
		job.Tenant = tenant
		r.Job = c.Queue.Push(ctx, job)
	}
	if a := f.Acked; a != nil {
		r.Acked = ports.ErrNotAttempted
		if r.Job == nil {
			r.Acked = c.Seqs.MarkAcked(ctx, tenant, a.Topic, a.From, a.ClientMsgID)
		}
	}
	if s := f.Settle; s != nil {
		r.Settle = ports.ErrNotAttempted
		if r.Job == nil {
			r.Settle = nil
			for _, n := range s.Seqs {
				if err := c.Pending.Settle(ctx, tenant, s.Topic, n, s.Attempt); err != nil {
					r.Settle = err
				}
			}
		}
	}
	if f.Route != nil {
		r.Route = c.Routes.Apply(ctx, tenant, []ports.RouteUpdate{*f.Route})
	}
	if f.Hot != nil && c.Hot != nil {
		r.Hot = c.Hot.Put(ctx, tenant, *f.Hot)
	}
	return r
}
