package delivery

// QueueDepth is what waits in one tenant's deliver queue: per partition of the current split,
// and on the dead-letter list.
type QueueDepth struct {
	Partitions []PartitionDepth // index = partition
	Dead       int64
}

// PartitionDepth is one partition's backlog.
type PartitionDepth struct {
	Queued     int64 // jobs waiting in the partition's queue
	Processing int64 // jobs taken and not acknowledged
	// OldestQueuedAt is the QueuedAt (Unix ms) of the job at the head of the queue, the next to
	// be taken; 0 when the queue is empty.
	OldestQueuedAt int64
}
