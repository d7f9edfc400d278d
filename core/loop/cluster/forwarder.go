package cluster

import (
	"context"
	"encoding/json"
	"log/slog"

	"github.com/imdhq/imd/core/domain/presence"
	"github.com/imdhq/imd/ports"
)

// Forwarder hands single envelopes (device pushes, kicks) to other nodes' channels.
type Forwarder struct {
	cfg     Config
	channel ports.NodeChannel
	clock   ports.Clock
	metrics ports.Metrics
	log     *slog.Logger
}

// NewForwarder returns a forwarder on channel.
func NewForwarder(cfg Config, channel ports.NodeChannel, clock ports.Clock, metrics ports.Metrics, log *slog.Logger) *Forwarder {
	return &Forwarder{cfg: cfg, channel: channel, clock: clock, metrics: metrics, log: log}
}

// send hands one envelope to node and counts the outcome.
func (f *Forwarder) send(ctx context.Context, tenant, node string, env envelope) bool {
	body, err := json.Marshal(env)
	sent := false
	if err == nil {
		sent, err = f.channel.Send(ctx, tenant, node, f.cfg.Backlog, body)
	}
	switch {
	case err != nil:
		f.metrics.Inc("cross_node_push_total", resultError)
		f.log.WarnContext(ctx, "envelope not handed to its node", "tenant", tenant, "node", node, "kind", env.Kind, "err", err)
	case !sent:
		f.metrics.Inc("cross_node_push_total", resultOverflow)
	default:
		f.metrics.Inc("cross_node_push_total", resultForwarded)
	}
	return sent && err == nil
}

// kick asks node to close the connection prev names.
func (f *Forwarder) kick(ctx context.Context, tenant string, prev presence.Entry) bool {
	return f.send(ctx, tenant, prev.Node, envelope{Kind: envKick, SentAt: f.clock.Now().UnixMilli(),
		User: prev.User, Device: prev.Device, Token: prev.Token})
}
