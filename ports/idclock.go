package ports

import "context"

// IDWatermark reads the newest msg_id a tenant has stored, so a node refuses to start while its
// clock is behind the ids it issued before (DESIGN §1 IDs): a clock that went back would
// otherwise issue ids that sort before stored ones.
type IDWatermark interface {
	MaxMessageID(ctx context.Context, tenant string) (int64, error)
}
