package ports

import (
	"context"

	"github.com/imdhq/imd/core/domain/delivery"
)

// DeliverDepth measures the deliver queue's backlog for the metrics (seed 003 §17
// deliver_queue_depth, deliver_processing_depth). It only reads. A list it cannot read counts
// 0 and is named in the error, which then comes with the depth of everything else.
type DeliverDepth interface {
	Depth(ctx context.Context, tenant string) (delivery.QueueDepth, error)
}
