package cluster

import (
	"context"
	"log/slog"
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

type release struct {
	tenant string
	entry  presence.Entry
}

// Tracker writes the presence of this node's connections (the session registry's observer)
// and kicks a device's connection on another node when the device authenticates here.
type Tracker struct {
	view     *View
	presence ports.Presence
	kicks    *Forwarder
	log      *slog.Logger

	next     atomic.Uint64
	mu       sync.Mutex
	tokens   map[deviceKey]uint64 // the token of each device connected here
	releases chan release
}

// NewTracker returns a tracker; Run writes its removals.
func NewTracker(view *View, p ports.Presence, kicks *Forwarder, log *slog.Logger) *Tracker {
	return &Tracker{view: view, presence: p, kicks: kicks, log: log,
		tokens: make(map[deviceKey]uint64), releases: make(chan release, releaseQueue)}
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
	prev, found, err := t.presence.Claim(ctx, tenant, e)
	if err != nil {
		t.log.WarnContext(ctx, "presence not written; pushes from other nodes miss this device until it reconnects",
			"tenant", tenant, "user_id", user, "device_id", device, "err", err)
		return
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
	select {
	case t.releases <- release{tenant, presence.Entry{User: user, Device: device, Node: t.view.Self(), Token: token}}:
	default:
		t.log.Warn("presence removal dropped: queue full", "tenant", tenant, "user_id", user, "device_id", device)
	}
}

// holds reports whether the device's connection here is the one token names.
func (t *Tracker) holds(tenant string, user int64, device uint64, token uint64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	held, ok := t.tokens[deviceKey{tenant, user, device}]
	return ok && held == token
}

// Run writes queued removals until ctx ends, then the ones still queued.
func (t *Tracker) Run(ctx context.Context) {
	work := context.WithoutCancel(ctx)
	for {
		select {
		case r := <-t.releases:
			t.release(work, r)
		case <-ctx.Done():
			for {
				select {
				case r := <-t.releases:
					t.release(work, r)
				default:
					return
				}
			}
		}
	}
}

func (t *Tracker) release(ctx context.Context, r release) {
	ctx, cancel := context.WithTimeout(ctx, claimTimeout)
	defer cancel()
	if err := t.presence.Release(ctx, r.tenant, r.entry); err != nil {
		t.log.WarnContext(ctx, "presence not removed", "tenant", r.tenant, "user_id", r.entry.User, "device_id", r.entry.Device, "err", err)
	}
}
