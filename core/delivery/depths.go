package delivery

// PartitionDepth is what one partition of a tenant's deliver queue holds.
type PartitionDepth struct {
	Partition  int
	Queued     int64
	Processing int64
	// OldestQueuedAt is the QueuedAt of the partition's next job (Unix ms), 0 when empty: now
	// minus it is how far the partition's consumer lags behind.
	OldestQueuedAt int64
}

// Depths are a tenant's deliver queue partitions and dead letters, for operators.
type Depths struct {
	Partitions []PartitionDepth
	Dead       int64
}
