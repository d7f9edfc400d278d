package cluster

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/imdhq/imd/core/domain/presence"
	"github.com/imdhq/imd/ports"
)

// Config tunes the many-node side of a node.
type Config struct {
	// LeaseTTL is how long a node and its deliver partitions stay someone's after its last
	// renewal: a node killed with -9 looks alive, and its partitions wait, for at most this.
	LeaseTTL time.Duration
	// Backlog bounds each node's push channel: a node that does not keep up gets no more
	// pushes; they become MISSED_MESSAGE rows instead of waiting.
	Backlog int
	// NodeID is this node's node_id, the first part of its instance name (InstanceName).
	NodeID int
}

// renewEvery is the Keeper's pass interval for a lease of ttl: three renewals fit in a lease,
// and a node learns of a new one within a second.
func renewEvery(ttl time.Duration) time.Duration { return min(ttl/3, time.Second) }

// KeeperDeps are the ports the Keeper uses.
type KeeperDeps struct {
	View    *View
	Nodes   ports.NodeLeases
	Leases  ports.DeliverLeases
	Tenants Tenants
	// Changes hears of the users whose devices a retired node held (issue 31); nil: nobody.
	Changes Changes
	// Held claims again the devices connected here once the registry lost this node's lease
	// or Redis failed over (DESIGN §13 "After a registry loss"), and names their users to
	// Changes when the registry is whole again; nil: nothing is restored.
	Held Held
	// Lineage tells a Redis failover or restart (DESIGN §1.13), which may lose the last claims
	// while the lease survives; nil: only a lapsed lease restores.
	Lineage ports.RedisLineage
	Log     *slog.Logger
}

// Held is this node's connected devices (the Tracker).
type Held interface {
	// Restore claims the tenant's devices connected here where the registry has no entry.
	Restore(ctx context.Context, tenant string) (int, error)
	// Users are the users of the tenant with a device connected here.
	Users(tenant string) []int64
}

// Tenants are the names of the tenants this process serves, read on every pass so tenants
// provisioned at run time are covered.
type Tenants func() []string

// Local is this node's own sessions, undecorated: where the Pusher and the Receiver push to
// devices connected here.
type Local interface{ ports.DevicePusher }

type partitionKey struct {
	tenant    string
	partition int
}

type partitionState struct {
	held    bool
	surplus bool      // held, but another live node should consume it
	renewed time.Time // node clock: held only within LeaseTTL of the last renewal
}

// Keeper keeps this node's lease and deliver partitions (see the package doc). It implements
// deliver.Owner.
type Keeper struct {
	cfg Config
	d   KeeperDeps

	mu    sync.Mutex
	parts map[partitionKey]*partitionState
	seen  map[string]bool // tenants passed at least once
	owed  map[string]bool // tenants whose lease lapsed and whose devices are not restored yet
	whole map[string]bool // tenants whose registry the last pass found whole (Mend)

	lineage string // the Redis lineage the last pass read; only passes touch it

	cancel context.CancelFunc
	done   chan struct{}
}

// NewKeeper returns a stopped keeper.
func NewKeeper(cfg Config, d KeeperDeps) *Keeper {
	return &Keeper{cfg: cfg, d: d, parts: make(map[partitionKey]*partitionState), seen: make(map[string]bool), owed: make(map[string]bool),
		whole: make(map[string]bool)}
}

// Start makes one pass, waits one interval and passes again, so the other nodes have seen this
// one before it takes connections, then renews in the background.
func (k *Keeper) Start(ctx context.Context) error {
	k.pass(ctx)
	wait := time.NewTimer(renewEvery(k.cfg.LeaseTTL))
	select {
	case <-ctx.Done():
		wait.Stop()
		return ctx.Err()
	case <-wait.C:
	}
	k.pass(ctx)
	run, cancel := context.WithCancel(context.WithoutCancel(ctx))
	k.cancel, k.done = cancel, make(chan struct{})
	go func() {
		defer close(k.done)
		t := time.NewTicker(renewEvery(k.cfg.LeaseTTL))
		defer t.Stop()
		for {
			select {
			case <-run.Done():
				return
			case <-t.C:
				k.pass(run)
			}
		}
	}()
	return nil
}

// Stop ends the renewals, gives the partitions back and retires this node, so the others take
// over at once instead of after LeaseTTL. Call it after the deliver workers and the listener
// stopped.
func (k *Keeper) Stop(ctx context.Context) error {
	if k.cancel == nil {
		return nil
	}
	k.cancel()
	<-k.done
	k.mu.Lock()
	var held []partitionKey
	for key, st := range k.parts {
		if st.held {
			held = append(held, key)
			st.held = false
		}
	}
	tenants := make([]string, 0, len(k.seen))
	for t := range k.seen {
		tenants = append(tenants, t)
	}
	k.mu.Unlock()
	for _, key := range held {
		if err := k.d.Leases.Release(ctx, key.tenant, key.partition, k.d.View.Self()); err != nil {
			k.d.Log.WarnContext(ctx, "deliver lease not released", "tenant", key.tenant, "partition", key.partition, "err", err)
		}
	}
	for _, t := range tenants {
		users, err := k.d.Nodes.Retire(ctx, t, k.d.View.Self())
		if err != nil {
			k.d.Log.WarnContext(ctx, "node not retired; its lease runs out instead", "tenant", t, "err", err)
			continue
		}
		k.left(ctx, t, users)
	}
	return nil
}

// pass renews this node's lease in every tenant, retires dead nodes and holds partitions.
func (k *Keeper) pass(ctx context.Context) {
	self := k.d.View.Self()
	defer k.watchLineage(ctx)
	for _, tenant := range k.d.Tenants() {
		live, expired, lapsed, err := k.d.Nodes.Renew(ctx, tenant, self, k.cfg.LeaseTTL)
		if err != nil {
			k.d.Log.WarnContext(ctx, "node lease not renewed", "tenant", tenant, "node", self, "err", err)
			k.mend(ctx, tenant, false, false)
			continue
		}
		// An earlier instance of this node_id is this node before a restart: dead for sure.
		for _, n := range live {
			if n != self && presence.NodeID(n) == presence.NodeID(self) {
				expired = append(expired, n)
			}
		}
		var retired []int64 // users whose devices the dead nodes held
		for _, n := range expired {
			if n == self {
				continue
			}
			users, err := k.d.Nodes.Retire(ctx, tenant, n)
			if err != nil {
				k.d.Log.WarnContext(ctx, "dead node not retired", "tenant", tenant, "node", n, "err", err)
				continue
			}
			k.d.Log.InfoContext(ctx, "retired dead node", "tenant", tenant, "node", n, "users", len(users))
			retired = append(retired, users...)
		}
		live = slices.DeleteFunc(live, func(n string) bool { return slices.Contains(expired, n) })
		slices.Sort(live)
		k.d.View.set(tenant, live)
		// After the view forgot the dead nodes, so their entries no longer count as online.
		k.left(ctx, tenant, retired)
		owed := k.restore(ctx, tenant, lapsed)
		k.mend(ctx, tenant, true, owed)
		k.holdPartitions(ctx, tenant, live)
		k.mu.Lock()
		k.seen[tenant] = true
		k.mu.Unlock()
	}
}

// watchLineage reads the Redis lineage after the renewals, bounded by one pass interval so a
// master that hangs delays no renewal, and owes the tenants passed so far a restore (in the
// next pass) when it changed since the last read; a read that fails changes nothing.
func (k *Keeper) watchLineage(ctx context.Context) {
	if k.d.Lineage == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, renewEvery(k.cfg.LeaseTTL))
	defer cancel()
	now, err := k.d.Lineage.Lineage(ctx)
	if err != nil {
		k.d.Log.WarnContext(ctx, "redis lineage unknown", "err", err)
		return
	}
	was := k.lineage
	k.lineage = now
	if was == "" || was == now {
		return
	}
	k.mu.Lock()
	for tenant := range k.seen {
		k.owed[tenant] = true
	}
	k.mu.Unlock()
}

// restore claims this node's devices again after its lease lapsed or Redis failed over, and
// on later passes until that succeeds: the renewal that noticed has put the lease back, so
// only owed remembers. It reports whether this pass owed a restore.
func (k *Keeper) restore(ctx context.Context, tenant string, lapsed bool) bool {
	k.mu.Lock()
	if lapsed && k.seen[tenant] {
		k.owed[tenant] = true
	}
	owed := k.owed[tenant]
	k.mu.Unlock()
	if !owed {
		return false
	}
	var (
		n   int // no Held: no device to claim again
		err error
	)
	if k.d.Held != nil {
		n, err = k.d.Held.Restore(ctx, tenant)
	}
	if err != nil {
		k.d.Log.WarnContext(ctx, "devices not claimed again after a registry loss; retried next pass", "tenant", tenant, "restored", n, "err", err)
		return true
	}
	k.mu.Lock()
	delete(k.owed, tenant)
	k.mu.Unlock()
	k.d.Log.WarnContext(ctx, "registry lost or failed over; devices connected here claimed again", "tenant", tenant, "restored", n)
	return true
}

// mend keeps the registry's wholeness mark after this pass's renewal (DESIGN §13 "Unknown
// until healed") and, when it is whole, tells Changes: of the users connected here too when it
// was not whole at the last pass. renewed: the lease was renewed (a failed renewal, Redis
// unreadable, counts as not whole, so the heal after it pushes too); owes: this pass found a
// loss or still owes a restore.
func (k *Keeper) mend(ctx context.Context, tenant string, renewed, owes bool) {
	k.mu.Lock()
	known := k.seen[tenant]
	was, passed := k.whole[tenant]
	k.mu.Unlock()
	whole := false
	if renewed {
		var err error
		if whole, err = k.d.Nodes.Mend(ctx, tenant, k.cfg.LeaseTTL, known, owes); err != nil {
			k.d.Log.WarnContext(ctx, "presence registry mark not kept", "tenant", tenant, "err", err)
		}
	}
	k.mu.Lock()
	k.whole[tenant] = whole
	k.mu.Unlock()
	if !whole || k.d.Changes == nil || k.d.Held == nil {
		return
	}
	var users []int64
	if passed && !was {
		k.d.Log.InfoContext(ctx, "presence registry whole again", "tenant", tenant)
		users = k.d.Held.Users(tenant)
	}
	k.d.Changes.Healed(ctx, tenant, users)
}

// left tells Changes that users lost the devices a retired node held.
func (k *Keeper) left(ctx context.Context, tenant string, users []int64) {
	if k.d.Changes != nil && len(users) > 0 {
		k.d.Changes.Left(ctx, tenant, users)
	}
}

// holdPartitions renews the partitions this node holds and takes the ones the live nodes'
// order gives it: partition p belongs to live[p mod len(live)]. A held partition that now
// belongs to another node is surplus: its consumer gives it back once it holds no job.
func (k *Keeper) holdPartitions(ctx context.Context, tenant string, live []string) {
	self := k.d.View.Self()
	for p := range k.d.Leases.Partitions() {
		key := partitionKey{tenant, p}
		k.mu.Lock()
		st := k.parts[key]
		if st == nil {
			st = &partitionState{}
			k.parts[key] = st
		}
		wasHeld := st.held
		k.mu.Unlock()
		mine := len(live) == 0 || live[p%len(live)] == self
		if !wasHeld && !mine {
			continue
		}
		now := time.Now()
		held, fresh, err := k.d.Leases.Hold(ctx, tenant, p, self, k.cfg.LeaseTTL)
		if err != nil {
			k.d.Log.WarnContext(ctx, "deliver lease not renewed", "tenant", tenant, "partition", p, "err", err)
			continue
		}
		if fresh {
			k.d.Log.InfoContext(ctx, "took deliver partition", "tenant", tenant, "partition", p, "node", self)
		}
		k.mu.Lock()
		st.held, st.surplus = held, held && !mine
		if held {
			st.renewed = now
		}
		k.mu.Unlock()
	}
}

// Holds reports whether this node consumes the partition now.
func (k *Keeper) Holds(tenant string, partition int) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	st := k.parts[partitionKey{tenant, partition}]
	return st != nil && st.held && time.Since(st.renewed) < k.cfg.LeaseTTL
}

// Surplus reports whether a held partition should go to another node.
func (k *Keeper) Surplus(tenant string, partition int) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	st := k.parts[partitionKey{tenant, partition}]
	return st != nil && st.held && st.surplus
}

// Yield gives a partition back; its consumer calls it when it holds no job.
func (k *Keeper) Yield(ctx context.Context, tenant string, partition int) {
	k.mu.Lock()
	st := k.parts[partitionKey{tenant, partition}]
	if st == nil || !st.held {
		k.mu.Unlock()
		return
	}
	st.held, st.surplus = false, false
	k.mu.Unlock()
	if err := k.d.Leases.Release(ctx, tenant, partition, k.d.View.Self()); err != nil {
		k.d.Log.WarnContext(ctx, "deliver lease not released; it runs out instead", "tenant", tenant, "partition", partition, "err", err)
		return
	}
	k.d.Log.InfoContext(ctx, "gave deliver partition back", "tenant", tenant, "partition", partition)
}

// Alone reports whether this node is the only live one of the tenant.
func (k *Keeper) Alone(tenant string) bool { return k.d.View.Alone(tenant) }
