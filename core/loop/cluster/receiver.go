package cluster

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/imdhq/imd/core/domain/delivery"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/ports"
)

// receiveBatch and receiveWait bound one read of the channel.
const (
	receiveBatch = 256
	receiveWait  = time.Second
)

// Fallback acts for the devices a MESSAGE push did not reach (deliver.Fallback): the
// MISSED_MESSAGE rows and the system push a local failure gets, once per key.
type Fallback interface {
	ActOnce(ctx context.Context, tenant, key string, u delivery.Unreached)
}

// ReceiverDeps are what the Receiver reads and pushes to.
type ReceiverDeps struct {
	View    *View
	Channel ports.NodeChannel
	Local   Local
	Kicker  ports.Kicker
	// Users forgets what this node cached about a user an envelope says was disabled or deleted.
	Users    UserForgetter
	Tracker  *Tracker
	Fallback Fallback
	Tenants  Tenants
	Clock    ports.Clock
	Metrics  ports.Metrics
	Log      *slog.Logger
}

// Receiver reads this node's channel of every tenant, one reader per tenant, and pushes to
// local sessions exactly as the deliver worker would have: the same registry, so the same
// outbound limits, sending-device exclusion and PUSH_ACK tracking; a MESSAGE push a connected
// device refused gets what a local failure gets (deliver.Fallback: its row, and its user's
// system push unless the job or a mute says not), once per job and receiving node. One reader
// per channel keeps the order the sender wrote.
type Receiver struct {
	d       ReceiverDeps
	mu      sync.Mutex
	started map[string]bool
	wg      sync.WaitGroup
	cancel  context.CancelFunc
	ctx     context.Context
}

// NewReceiver returns a stopped receiver.
func NewReceiver(d ReceiverDeps) *Receiver { return &Receiver{d: d, started: make(map[string]bool)} }

// tenantsEvery is how often the receiver looks for tenants provisioned since it started.
const tenantsEvery = 5 * time.Second

// Start starts a reader for every tenant known now, and for later ones as they appear.
func (r *Receiver) Start(ctx context.Context) {
	r.mu.Lock()
	r.ctx, r.cancel = context.WithCancel(context.WithoutCancel(ctx))
	r.mu.Unlock()
	r.refresh()
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		t := time.NewTicker(tenantsEvery)
		defer t.Stop()
		for {
			select {
			case <-r.ctx.Done():
				return
			case <-t.C:
				r.refresh()
			}
		}
	}()
}

// refresh starts readers for tenants that appeared since.
func (r *Receiver) refresh() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ctx == nil || r.ctx.Err() != nil {
		return
	}
	for _, t := range r.d.Tenants() {
		if r.started[t] {
			continue
		}
		r.started[t] = true
		r.wg.Add(1)
		go r.run(r.ctx, t)
	}
}

// Stop ends the readers; what is unread is pushed by nobody, and the devices it was for catch
// up by sync (they are disconnecting too: the listener stops first).
func (r *Receiver) Stop() {
	if r.cancel == nil {
		return
	}
	r.mu.Lock()
	r.cancel()
	r.mu.Unlock()
	r.wg.Wait()
}

func (r *Receiver) run(ctx context.Context, tenant string) {
	defer r.wg.Done()
	self, after := r.d.View.Self(), ""
	for ctx.Err() == nil {
		msgs, err := r.d.Channel.Receive(ctx, tenant, self, after, receiveBatch, receiveWait)
		if err != nil {
			if ctx.Err() == nil {
				r.d.Log.WarnContext(ctx, "node channel read failed", "tenant", tenant, "err", err)
				pause(ctx, time.Second)
			}
			continue
		}
		if len(msgs) == 0 {
			continue
		}
		ids := make([]string, len(msgs))
		for i, m := range msgs {
			ids[i], after = m.ID, m.ID
			r.handle(ctx, tenant, m.Body)
		}
		if err := r.d.Channel.Remove(context.WithoutCancel(ctx), tenant, self, ids...); err != nil {
			r.d.Log.WarnContext(ctx, "node channel not trimmed", "tenant", tenant, "err", err)
		}
	}
}

func (r *Receiver) handle(ctx context.Context, tenant string, body []byte) {
	env, err := decodeEnvelope(body)
	if err != nil {
		r.d.Metrics.Inc("cross_node_push_total", resultMalformed)
		r.d.Log.WarnContext(ctx, "node envelope dropped", "tenant", tenant, "err", err)
		return
	}
	r.d.Metrics.Observe("cross_node_push_lag_seconds", max(0, r.d.Clock.Now().Sub(time.UnixMilli(env.SentAt)).Seconds()))
	switch env.Kind {
	case envKick:
		if r.d.Tracker.holds(tenant, env.User, env.Device, env.Token) {
			r.d.Kicker.Kick(tenant, env.User, env.Device, kickReasonReplaced)
		}
	case envUser:
		// Forget first: a client the KICK sends back to AUTH here reads the directory again.
		r.d.Users.ForgetUser(tenant, env.User)
		r.d.Kicker.Kick(tenant, env.User, 0, env.Reason)
	case envDevice:
		r.d.Local.PushDevice(ctx, tenant, env.User, env.Device, env.addressed()[0].Push)
	case envPushes:
		pushes := env.addressed()
		for i, out := range r.d.Local.PushReach(ctx, tenant, pushes...) {
			r.d.Metrics.Add("cross_node_push_total", float64(out.Delivered), resultDelivered)
			// A recipient gone from here since the lookup reconnects elsewhere and syncs.
			r.d.Metrics.Add("cross_node_push_total", float64(out.Offline), resultGone)
			r.d.Metrics.Add("cross_node_push_total", float64(len(out.FailedDevices)), resultFailed)
			if a := pushes[i]; a.Push.Kind == delivery.KindMessage && len(out.FailedDevices) > 0 {
				r.d.Fallback.ActOnce(ctx, tenant, r.onceKey(a.Push.Message), delivery.Unreached{
					Message: a.Push.Message, From: a.Target.Sender, NotMailbox: a.Target.NotMailbox, NotPush: a.Target.NotPush,
					Muted: a.Target.Muted, Failed: out.FailedDevices,
				})
			}
		}
	}
}

// onceKey is the done key of msg's job on this node: the sending node's own mark is set after
// it handed the push over, and says nothing of what failed here. A rerun of the job (its
// consumer died before its mark) hands the push over again and finds this one set.
func (r *Receiver) onceKey(msg *message.Message) string {
	return delivery.Job{Kind: delivery.KindMessage, MsgID: msg.MsgID}.DoneKey() + "@" + r.d.View.Self()
}

// kickReasonReplaced is PROTOCOL §3's reason for a connection a second AUTH replaced.
const kickReasonReplaced = "replaced"

func pause(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
