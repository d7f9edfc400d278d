package ports

import (
	"context"
	"time"

	"github.com/imdhq/imd/core/domain/presence"
)

// NodeLeases is the set of imd node instances serving a tenant, each alive while it renews
// its lease (DESIGN §11).
type NodeLeases interface {
	// Renew extends node's lease to ttl from the store's clock and returns the nodes whose
	// lease runs (node included) and those whose lease has run out. lapsed: node had no running
	// lease before this renewal (its first, or the registry lost it: a flush, a failover, a
	// retirement by survivors while it stalled), so the presence entries it holds may be gone
	// too and it restores them (DESIGN §13 "After a registry loss").
	Renew(ctx context.Context, tenant, node string, ttl time.Duration) (live, expired []string, lapsed bool, err error)
	// Retire removes node: its lease, the presence entries it still holds and its push
	// channel. Survivors call it for an expired node, a node for itself when it stops. Calling
	// it twice is harmless. users are those whose entry this call removed (each once, however
	// many devices; two nodes retiring at once split them), so whoever removed a user's last
	// device can tell others the user went offline (issue 31).
	Retire(ctx context.Context, tenant, node string) (users []int64, err error)
	// Mend keeps the registry's wholeness mark (DESIGN §13 "Unknown until healed") after node's
	// renewal and reports whether the registry is whole: every live node's connected devices
	// are in it. owes: this node found a loss (its lease lapsed after it had passed the tenant,
	// or Redis failed over) or has not claimed its devices again yet; the registry is then not
	// whole until a lease after the last node that owed. known: this node passed the tenant
	// before, so it may hold devices; a node that did not, finding neither the mark nor a heal
	// under way, takes the registry as whole (a new deployment or tenant).
	Mend(ctx context.Context, tenant string, ttl time.Duration, known, owes bool) (whole bool, err error)
}

// Presence maps each connected (user, device) of a tenant to the node instance holding it.
type Presence interface {
	// Claim records e and returns the entry it replaced, if any.
	Claim(ctx context.Context, tenant string, e presence.Entry) (previous presence.Entry, found bool, err error)
	// Release removes e if it is still the device's entry (a newer claim stays).
	Release(ctx context.Context, tenant string, e presence.Entry) error
	// Lookup returns the entries of the users' devices; malformed entries are left out.
	Lookup(ctx context.Context, tenant string, users []int64) ([]presence.Entry, error)
	// Restore records each of entries (all of one node) whose device has no entry, as Claim
	// would, and leaves a device claimed since by another connection alone. It returns how many
	// it recorded.
	Restore(ctx context.Context, tenant string, entries []presence.Entry) (restored int, err error)
	// LookupWhole is Lookup together with whether the registry holds every live node's
	// devices (the mark NodeLeases.Mend keeps), in one round trip: whole is false from a loss
	// (a flush, a restart, a failover) until every node had a lease to claim its devices again,
	// so a missing entry does not mean offline. The mark is read after the entries.
	LookupWhole(ctx context.Context, tenant string, users []int64) (entries []presence.Entry, whole bool, err error)
	// Entries returns the entries that name node, as the registry holds them: after a failover
	// to a replica that lacks the last releases, some may be of devices the node no longer
	// holds (DESIGN §13 "After a registry loss").
	Entries(ctx context.Context, tenant, node string) ([]presence.Entry, error)
}

// NodeMessage is one envelope on a node's push channel.
type NodeMessage struct {
	ID   string
	Body []byte
}

// NodeChannel is the per-node push channel of a tenant: pushes and kicks handed from the node
// that has them to the node holding the connection. It is bounded: a channel whose backlog
// reached its limit refuses more instead of dropping what it holds.
type NodeChannel interface {
	// Send appends bodies to node's channel in order, unless its backlog has reached limit
	// (sent=false, nothing appended).
	Send(ctx context.Context, tenant, node string, limit int, bodies ...[]byte) (sent bool, err error)
	// Receive waits up to wait for envelopes after the cursor ("" = from the start), at most
	// count, oldest first.
	Receive(ctx context.Context, tenant, node, after string, count int, wait time.Duration) ([]NodeMessage, error)
	// Remove drops received envelopes, so the backlog counts only unread ones.
	Remove(ctx context.Context, tenant, node string, ids ...string) error
}

// DeliverLeases hands each partition of a tenant's deliver queue to one node at a time, so
// one consumer in the whole deployment keeps each topic in seq order.
type DeliverLeases interface {
	// Hold takes or renews partition's lease for node, for ttl. A lease of an earlier instance
	// of the same node_id is taken over at once. fresh: the lease was not node's before, and
	// the partition's processing list went back to the head of its queue in the same step
	// (the jobs a dead owner had in flight).
	Hold(ctx context.Context, tenant string, partition int, node string, ttl time.Duration) (held, fresh bool, err error)
	// Release gives the lease up if node holds it.
	Release(ctx context.Context, tenant string, partition int, node string) error
	// Partitions is how many partitions each tenant's queue has: 0 … Partitions()-1.
	Partitions() int
}

// Kicker closes the connection of a device held by this node with KICK {reason}.
type Kicker interface {
	Kick(tenant string, user int64, device uint64, reason string) int
}

// NodeStatus is one live node instance of a tenant as operators see it.
type NodeStatus struct {
	Node       string
	LeaseUntil time.Time // when the lease runs out unless renewed
	Devices    int64     // presence entries the instance holds
	Backlog    int64     // unread envelopes on its push channel
}

// NodeInspector shows operators a tenant's node instances (admin API, console).
type NodeInspector interface {
	// LiveNodes returns the instances whose lease runs, by name.
	LiveNodes(ctx context.Context, tenant string) ([]NodeStatus, error)
}

// DeliverLeaseHolders names the node instance consuming each deliver partition.
type DeliverLeaseHolders interface {
	// Holders returns one entry per partition: the instance whose lease runs, "" when free.
	Holders(ctx context.Context, tenant string) ([]string, error)
}
