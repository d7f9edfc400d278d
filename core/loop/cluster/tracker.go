package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/imdhq/imd/core/domain/presence"
	"github.com/imdhq/imd/ports"
)

// claimTimeout bounds the presence write an AUTH waits for. The session registry calls Bound
// without a request context, so the Tracker bounds it itself.
const claimTimeout = 3 * time.Second

// releaseQueue bounds the presence removals waiting to be written; a removal dropped when it
// is full leaves an entry that names this node for a device it no longer holds, which costs
// one forwarded push that finds nobody until the device connects again or this node retires.
const releaseQueue = 10_000

type deviceKey struct {
	tenant string
	user   int64
	device uint64
}

// change is a claim written (arrived) or a removal to write, in the order they happened.
type change struct {
	tenant  string
	entry   presence.Entry
	arrived bool // the user came online with this claim
}

// Changes hears of devices arriving and leaving, to tell others when a user comes online or
// goes offline (issue 31; presence.Service).
type Changes interface {
	// Arriving reports, before a claim, whether the user already has a device on a live node.
	Arriving(ctx context.Context, tenant string, user int64) bool
	// Arrived follows the claim of a user Arriving found offline: the user came online.
	Arrived(ctx context.Context, tenant string, user int64)
	// Left follows the removal of devices of users: those with none left went offline.
	Left(ctx context.Context, tenant string, users []int64)
	// Healed follows each keeper pass that found the registry whole (DESIGN §13 "Unknown until
	// healed"): users are those connected here when it was not whole at the last pass, whose
	// state the heal establishes, and none otherwise; changes that met the registry not whole
	// in between, which this node's passes may never have seen, are pushed now. It must not
	// wait: the keeper calls it between renewals.
	Healed(ctx context.Context, tenant string, users []int64)
}

// Tracker writes the presence of this node's connections (the session registry's observer)
// and kicks a device's connection on another node when the device authenticates here.
type Tracker struct {
	view     *View
	presence ports.Presence
	kicks    *Forwarder
	changes  Changes // nil: nobody hears
	log      *slog.Logger

	next    atomic.Uint64
	mu      sync.Mutex
	tokens  map[deviceKey]uint64 // the token of each device connected here
	pending chan change
}

// NewTracker returns a tracker; Run writes its removals and tells changes (nil: nobody) of
// arrivals and departures.
func NewTracker(view *View, p ports.Presence, kicks *Forwarder, changes Changes, log *slog.Logger) *Tracker {
	return &Tracker{view: view, presence: p, kicks: kicks, changes: changes, log: log,
		tokens: make(map[deviceKey]uint64), pending: make(chan change, releaseQueue)}
}

// Bound records that the device's connection is here, and kicks the connection it replaced
// on another node (PROTOCOL §3: KICK replaced, whichever node). It runs in the AUTH request,
// so the entry exists before the client gets its answer and syncs.
func (t *Tracker) Bound(tenant string, user int64, device uint64) {
	e := presence.Entry{User: user, Device: device, Node: t.view.Self(), Token: t.next.Add(1)}
	t.mu.Lock()
	t.tokens[deviceKey{tenant, user, device}] = e.Token
	t.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), claimTimeout)
	defer cancel()
	wasOnline := t.changes == nil || t.changes.Arriving(ctx, tenant, user)
	prev, found, err := t.presence.Claim(ctx, tenant, e)
	if err != nil {
		t.log.WarnContext(ctx, "presence not written; pushes from other nodes miss this device until it reconnects",
			"tenant", tenant, "user_id", user, "device_id", device, "err", err)
		return
	}
	if !wasOnline {
		t.queue(change{tenant: tenant, entry: e, arrived: true})
	}
	if found && prev.Node != e.Node && t.view.Live(tenant, prev.Node) && t.kicks.kick(ctx, tenant, prev) {
		t.log.InfoContext(ctx, "device connection replaced on another node", "tenant", tenant, "user_id", user,
			"device_id", device, "node", prev.Node)
	}
}

// Unbound queues the removal of the device's entry; it runs on event loops, which never wait
// on Redis.
func (t *Tracker) Unbound(tenant string, user int64, device uint64) {
	k := deviceKey{tenant, user, device}
	t.mu.Lock()
	token, ok := t.tokens[k]
	delete(t.tokens, k)
	t.mu.Unlock()
	if !ok {
		return
	}
	t.queue(change{tenant: tenant, entry: presence.Entry{User: user, Device: device, Node: t.view.Self(), Token: token}})
}

// queue hands c to Run without waiting.
func (t *Tracker) queue(c change) {
	select {
	case t.pending <- c:
	default:
		t.log.Warn("presence change dropped: queue full", "tenant", c.tenant, "user_id", c.entry.User,
			"device_id", c.entry.Device, "arrived", c.arrived)
	}
}

// holds reports whether the device's connection here is the one token names.
func (t *Tracker) holds(tenant string, user int64, device uint64, token uint64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	held, ok := t.tokens[deviceKey{tenant, user, device}]
	return ok && held == token
}

// restoreBatch bounds the entries one Restore writes, one round trip each.
const restoreBatch = 500

// Restore claims again, where still vacant, the devices of tenant connected here: the
// registry lost them while they stayed connected (DESIGN §13 "After a registry loss"). A
// device that disconnected meanwhile is not among them, so it stays offline; one that
// disconnects while its entry is being written, whose queued removal may have run first, is
// removed again after. An entry of this node for a device it no longer holds — a release the
// failover lost — is removed as a disconnection is, so it never reads online. It returns how
// many entries it wrote.
func (t *Tracker) Restore(ctx context.Context, tenant string) (int, error) {
	self := t.view.Self()
	t.mu.Lock()
	var held []presence.Entry
	for k, token := range t.tokens {
		if k.tenant == tenant {
			held = append(held, presence.Entry{User: k.user, Device: k.device, Node: self, Token: token})
		}
	}
	t.mu.Unlock()
	restored := 0
	for page := range slices.Chunk(held, restoreBatch) {
		n, err := t.presence.Restore(ctx, tenant, page)
		restored += n
		for _, e := range page {
			if !t.holds(tenant, e.User, e.Device, e.Token) {
				err = errors.Join(err, t.presence.Release(ctx, tenant, e))
			}
		}
		if err != nil {
			return restored, fmt.Errorf("restore %d devices of %s: %w", len(held), tenant, err)
		}
	}
	entries, err := t.presence.Entries(ctx, tenant, self)
	if err != nil {
		return restored, fmt.Errorf("restore devices of %s: %w", tenant, err)
	}
	for _, e := range entries {
		if !t.holds(tenant, e.User, e.Device, e.Token) {
			t.queue(change{tenant: tenant, entry: e})
		}
	}
	return restored, nil
}

// Users returns the users of tenant with a device connected here, sorted.
func (t *Tracker) Users(tenant string) []int64 {
	t.mu.Lock()
	set := map[int64]bool{}
	for k := range t.tokens {
		if k.tenant == tenant {
			set[k.user] = true
		}
	}
	t.mu.Unlock()
	return slices.Sorted(maps.Keys(set))
}

// Run writes queued removals until ctx ends, then the ones still queued.
func (t *Tracker) Run(ctx context.Context) {
	work := context.WithoutCancel(ctx)
	for {
		select {
		case c := <-t.pending:
			t.apply(work, c)
		case <-ctx.Done():
			for {
				select {
				case c := <-t.pending:
					t.apply(work, c)
				default:
					return
				}
			}
		}
	}
}

// apply tells of an arrival, or writes a removal and tells of it.
func (t *Tracker) apply(ctx context.Context, c change) {
	ctx, cancel := context.WithTimeout(ctx, claimTimeout)
	defer cancel()
	if c.arrived {
		t.changes.Arrived(ctx, c.tenant, c.entry.User)
		return
	}
	if err := t.presence.Release(ctx, c.tenant, c.entry); err != nil {
		t.log.WarnContext(ctx, "presence not removed", "tenant", c.tenant, "user_id", c.entry.User, "device_id", c.entry.Device, "err", err)
		return
	}
	if t.changes != nil {
		t.changes.Left(ctx, c.tenant, []int64{c.entry.User})
	}
}
