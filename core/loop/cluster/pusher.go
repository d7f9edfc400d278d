package cluster

import (
	"context"
	"encoding/json"
	"log/slog"
	"maps"
	"slices"

	"github.com/imdhq/imd/core/domain/delivery"
	"github.com/imdhq/imd/ports"
)

// Results of cross_node_push_total.
const (
	resultForwarded = "forwarded" // a frame handed to another node's channel
	resultOverflow  = "overflow"  // refused: that node's backlog is full (MISSED_MESSAGE instead)
	resultError     = "error"     // the channel or the presence lookup failed
	resultStale     = "stale"     // a presence entry of a node that is not alive, ignored
	resultDelivered = "delivered" // a forwarded frame queued to a local connection
	resultFailed    = "failed"    // a forwarded frame a local connection refused
	resultMalformed = "malformed" // an envelope that could not be read
	resultGone      = "gone"      // a forwarded push whose user has no connection here any more
)

// PusherDeps are what the Pusher decorates and uses.
type PusherDeps struct {
	Local    Local
	View     *View
	Presence ports.Presence
	Channel  ports.NodeChannel
	Clock    ports.Clock
	Metrics  ports.Metrics
	Log      *slog.Logger
}

// Pusher is the ports.DevicePusher of a node that shares its tenants with others: local
// sessions first, then one envelope per other node holding recipients. Devices on a node
// whose channel refused are reported failed, so the deliver worker writes their
// MISSED_MESSAGE rows; alone, it costs nothing but a map lookup.
type Pusher struct {
	cfg Config
	d   PusherDeps
	f   *Forwarder
}

var _ ports.DevicePusher = (*Pusher)(nil)

// NewPusher returns the decorator.
func NewPusher(cfg Config, d PusherDeps) *Pusher {
	return &Pusher{cfg: cfg, d: d, f: NewForwarder(cfg, d.Channel, d.Clock, d.Metrics, d.Log)}
}

// Push implements ports.Pusher.
func (p *Pusher) Push(ctx context.Context, tenant string, t delivery.Target, push delivery.Push) delivery.Report {
	return p.PushReach(ctx, tenant, delivery.Addressed{Target: t, Push: push})[0].Report
}

// remoteDevices maps node → user → that user's devices on the node.
type remoteDevices map[string]map[int64][]uint64

// remote looks the users up and keeps the devices on other live nodes.
func (p *Pusher) remote(ctx context.Context, tenant string, users []int64) (remoteDevices, bool) {
	entries, err := p.d.Presence.Lookup(ctx, tenant, users)
	if err != nil {
		p.d.Metrics.Inc("cross_node_push_total", resultError)
		p.d.Log.WarnContext(ctx, "presence lookup failed; devices on other nodes wait for sync", "tenant", tenant, "err", err)
		return nil, false
	}
	out := remoteDevices{}
	for _, e := range entries {
		if e.Node == p.d.View.Self() {
			continue
		}
		if !p.d.View.Live(tenant, e.Node) {
			p.d.Metrics.Inc("cross_node_push_total", resultStale)
			continue
		}
		if out[e.Node] == nil {
			out[e.Node] = make(map[int64][]uint64)
		}
		out[e.Node][e.User] = append(out[e.Node][e.User], e.Device)
	}
	return out, true
}

// PushReach implements ports.DevicePusher.
func (p *Pusher) PushReach(ctx context.Context, tenant string, pushes ...delivery.Addressed) []delivery.Outcome {
	outs := p.d.Local.PushReach(ctx, tenant, pushes...)
	if p.d.View.Alone(tenant) {
		return outs
	}
	users := map[int64]bool{}
	for _, a := range pushes {
		for _, u := range a.Target.Recipients {
			users[u] = true
		}
	}
	remote, ok := p.remote(ctx, tenant, slices.Collect(maps.Keys(users)))
	if !ok {
		return outs
	}
	for _, node := range slices.Sorted(maps.Keys(remote)) {
		p.forward(ctx, tenant, node, remote[node], pushes, outs)
	}
	return outs
}

// forward sends one envelope with the pushes for the users on node and books the outcome in
// outs: those users are no longer offline, their devices delivered or, when the channel
// refused, failed.
func (p *Pusher) forward(ctx context.Context, tenant, node string, devices map[int64][]uint64, pushes []delivery.Addressed, outs []delivery.Outcome) {
	env := envelope{Kind: envPushes, SentAt: p.d.Clock.Now().UnixMilli()}
	sets := map[*int64]int{} // a recipient slice shared by pushes → its set
	var from []int           // from[j]: the push env.Pushes[j] came from
	for i, a := range pushes {
		rs := a.Target.Recipients
		if len(rs) == 0 {
			continue
		}
		set, seen := sets[&rs[0]]
		if !seen {
			var here []int64
			for _, u := range rs {
				if len(devices[u]) > 0 {
					here = append(here, u)
				}
			}
			set = -1
			if len(here) > 0 {
				set = len(env.Sets)
				env.Sets = append(env.Sets, here)
			}
			sets[&rs[0]] = set
		}
		if set < 0 {
			continue
		}
		env.Pushes = append(env.Pushes, toWire(set, env.Sets[set], a))
		from = append(from, i)
	}
	if len(env.Pushes) == 0 {
		return
	}
	body, err := json.Marshal(env)
	sent := false
	if err == nil {
		sent, err = p.d.Channel.Send(ctx, tenant, node, p.cfg.Backlog, body)
	}
	result := resultForwarded
	switch {
	case err != nil:
		result = resultError
		p.d.Log.WarnContext(ctx, "push not handed to its node; its devices get MISSED_MESSAGE", "tenant", tenant, "node", node, "err", err)
	case !sent:
		result = resultOverflow
		p.d.Log.WarnContext(ctx, "node channel full; its devices get MISSED_MESSAGE", "tenant", tenant, "node", node)
	}
	for j, wp := range env.Pushes {
		i, t := from[j], pushes[from[j]].Target
		out := &outs[i]
		for _, u := range env.Sets[wp.Set] {
			if k := slices.Index(out.OfflineUsers, u); k >= 0 {
				out.OfflineUsers = slices.Delete(out.OfflineUsers, k, k+1)
				out.Offline--
			}
			for _, d := range devices[u] {
				if u == t.Sender && d == t.ExcludeDevice {
					continue
				}
				p.d.Metrics.Inc("cross_node_push_total", result)
				if result == resultForwarded {
					out.Delivered++
					continue
				}
				out.Failed++
				out.FailedDevices = append(out.FailedDevices, delivery.Device{User: u, Device: d})
			}
		}
	}
}

// PushDevice implements ports.DevicePusher: the local devices, then the user's devices on
// other nodes, each by its own envelope.
func (p *Pusher) PushDevice(ctx context.Context, tenant string, user int64, device uint64, push delivery.Push) int {
	took := p.d.Local.PushDevice(ctx, tenant, user, device, push)
	if p.d.View.Alone(tenant) {
		return took
	}
	remote, ok := p.remote(ctx, tenant, []int64{user})
	if !ok {
		return took
	}
	for _, node := range slices.Sorted(maps.Keys(remote)) {
		devs := remote[node][user]
		if device != 0 && !slices.Contains(devs, device) {
			continue
		}
		env := envelope{Kind: envDevice, SentAt: p.d.Clock.Now().UnixMilli(), User: user, Device: device,
			Sets: [][]int64{{user}}, Pushes: []wirePush{toWire(0, nil, delivery.Addressed{Push: push})}}
		if p.f.send(ctx, tenant, node, env) {
			took++
		}
	}
	return took
}
