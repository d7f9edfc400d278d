package memory

import (
	"context"
	"sync"

	"github.com/imdhq/imd/core/domain/delivery"
	"github.com/imdhq/imd/ports"
)

// Pushes is a ports.DevicePusher that keeps what it is handed and counts every recipient as
// reached: the live pushes of the use cases (presence, typing, receipts) as their tests see them.
type Pushes struct {
	mu  sync.Mutex
	got []delivery.Addressed
}

var _ ports.DevicePusher = (*Pushes)(nil)

// Push implements ports.Pusher.
func (p *Pushes) Push(ctx context.Context, tenant string, t delivery.Target, push delivery.Push) delivery.Report {
	return p.PushReach(ctx, tenant, delivery.Addressed{Target: t, Push: push})[0].Report
}

// PushReach implements ports.DevicePusher.
func (p *Pushes) PushReach(_ context.Context, _ string, pushes ...delivery.Addressed) []delivery.Outcome {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]delivery.Outcome, len(pushes))
	for i, a := range pushes {
		p.got = append(p.got, a)
		out[i].Delivered = len(a.Target.Recipients)
	}
	return out
}

// PushDevice implements ports.DevicePusher; no device is connected.
func (p *Pushes) PushDevice(context.Context, string, int64, uint64, delivery.Push) int { return 0 }

// Take returns the pushes kept so far and forgets them.
func (p *Pushes) Take() []delivery.Addressed {
	p.mu.Lock()
	defer p.mu.Unlock()
	got := p.got
	p.got = nil
	return got
}
