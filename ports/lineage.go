package ports

import "context"

// RedisLineage tells a node when Redis may have lost writes it had acknowledged (DESIGN §1.13,
// §5 "After a Redis failover"): replication is asynchronous, so a replica promoted by a
// failover, or a master restarted, lacks the last writes of the master before it, and nothing
// in the data says which.
type RedisLineage interface {
	// Lineage is an identity of the data history of the Redis masters the node writes to. It
	// stays the same while they keep every write they acknowledged, and changes when one of them
	// is replaced by a replica (a failover) or restarted: the events that may lose the last
	// writes. Nothing else is promised of its value.
	Lineage(ctx context.Context) (string, error)
}
