package ports

import (
	"context"

	"imd/core/delivery"
)

// DeliverInspector shows operators the deliver queue of seed 003 §12 and puts its dead letters
// back (admin API, console).
type DeliverInspector interface {
	// Depths counts each partition's queued and in-process jobs, with the queue time of its next
	// job, and the dead letters.
	Depths(ctx context.Context, tenant string) (delivery.Depths, error)
	// RequeueDead moves up to max dead letters, oldest first, to the tail of their topic's
	// partition with their attempts reset, and returns how many moved. A dead letter that does
	// not decode stays where it is.
	RequeueDead(ctx context.Context, tenant string, max int) (int, error)
}
