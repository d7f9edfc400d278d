package ports

import "context"

// DeliverInspector shows operators the deliver queue of seed 003 §12 and puts its dead letters
// back (admin API, console).
type DeliverInspector interface {
	DeliverDepth
	// RequeueDead moves up to max dead letters, oldest first, to the tail of their topic's
	// partition with their attempts reset, and returns how many moved. A dead letter that does
	// not decode stays where it is.
	RequeueDead(ctx context.Context, tenant string, max int) (int, error)
}
