package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"sync/atomic"

	"github.com/imdhq/imd/core/domain/delivery"
	"github.com/imdhq/imd/ports"
)

// InstanceName names this process "<node_id>-<random>": the node_id says which node (a
// restarted one retires its earlier instance at once), the random part tells a restart from
// the process before it.
func InstanceName(nodeID int) (string, error) {
	var boot [4]byte
	if _, err := rand.Read(boot[:]); err != nil {
		return "", fmt.Errorf("node instance name: %w", err)
	}
	return strconv.Itoa(nodeID) + "-" + hex.EncodeToString(boot[:]), nil
}

// LatePusher is the DevicePusher the deliver side is built with. The listener behind the
// Pusher authenticates through the tenant registry, which builds deliver workers for tenants
// added at run time, so the deliver side cannot be built after the listener: it is bound once
// the application is assembled, and nothing pushes before the application starts.
type LatePusher struct {
	target atomic.Pointer[ports.DevicePusher]
}

// Bind sets where pushes go.
func (l *LatePusher) Bind(p ports.DevicePusher) { l.target.Store(&p) }

func (l *LatePusher) Push(ctx context.Context, tenant string, t delivery.Target, p delivery.Push) delivery.Report {
	return (*l.target.Load()).Push(ctx, tenant, t, p)
}

func (l *LatePusher) PushReach(ctx context.Context, tenant string, pushes ...delivery.Addressed) []delivery.Outcome {
	return (*l.target.Load()).PushReach(ctx, tenant, pushes...)
}

func (l *LatePusher) PushDevice(ctx context.Context, tenant string, user int64, device uint64, p delivery.Push) int {
	return (*l.target.Load()).PushDevice(ctx, tenant, user, device, p)
}

// LateTenants hands the per-node loops the tenant registry's names. The registry builds
// deliver workers (for tenants provisioned at run time), which are built with the Keeper, so
// the Keeper cannot be built after it: the names are bound once the application is assembled,
// and there are none before.
type LateTenants struct {
	names atomic.Pointer[func() []string]
}

// Bind sets where the names come from.
func (l *LateTenants) Bind(names func() []string) { l.names.Store(&names) }

// Names are the bound names, none before Bind.
func (l *LateTenants) Names() []string {
	if n := l.names.Load(); n != nil {
		return (*n)()
	}
	return nil
}
