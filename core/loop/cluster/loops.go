package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/imdhq/imd/core/kit/background"
)

// NewNodeView names this process (InstanceName) and returns its view of the nodes.
func NewNodeView(cfg Config, log *slog.Logger) (*View, error) {
	name, err := InstanceName(cfg.NodeID)
	if err != nil {
		return nil, err
	}
	log.Info("node instance", "node", name)
	return NewView(name), nil
}

// Loops are this node's cluster loops: the keeper, the tracker's presence removals and the
// receiver of this node's push channel. They start before the deliver workers and the
// listener, so this node is known and holds its partitions before it delivers, and stop after
// them, once the listener has closed every connection and the workers have finished.
type Loops struct {
	keeper   *Keeper
	receiver *Receiver
	removals *background.Task // the tracker's presence removals
}

// NewLoops returns the loops, not started.
func NewLoops(k *Keeper, t *Tracker, r *Receiver) *Loops {
	return &Loops{keeper: k, receiver: r, removals: background.New(t.Run)}
}

// Start runs the keeper's first passes (Keeper.Start), then the removals and the receiver.
func (l *Loops) Start(ctx context.Context) error {
	if err := l.keeper.Start(ctx); err != nil {
		return fmt.Errorf("node lease: %w", err)
	}
	if err := l.removals.Start(ctx); err != nil {
		return fmt.Errorf("presence removals: %w", err)
	}
	l.receiver.Start(ctx)
	return nil
}

// Stop ends the receiver, writes the removals still queued, then gives the lease and
// partitions up (Keeper.Stop); it waits for the removals at most until ctx ends.
func (l *Loops) Stop(ctx context.Context) error {
	l.receiver.Stop()
	var waited error
	if err := l.removals.Stop(ctx); err != nil {
		waited = fmt.Errorf("presence removals: %w", err)
	}
	return errors.Join(waited, l.keeper.Stop(ctx))
}
