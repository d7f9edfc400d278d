package ports

import (
	"context"

	"imd/core/delivery"
)

// DeliverDepth measures the deliver queue's backlog for the metrics (seed 003 §17
// deliver_queue_depth, deliver_processing_depth). It only reads.
type DeliverDepth interface {
	Depth(ctx context.Context, tenant string) (delivery.QueueDepth, error)
}
