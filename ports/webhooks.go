package ports

import (
	"context"

	"github.com/imdhq/imd/core/domain/webhook"
)

// WebhookEndpoints keeps a tenant's webhook endpoints (docs/DESIGN.md issue-32, part 2) in
// the tenant database, secrets included: the deliverer signs with them.
type WebhookEndpoints interface {
	// CreateEndpoint stores e, its ID and times set by the caller.
	CreateEndpoint(ctx context.Context, tenant string, e webhook.Endpoint) error
	// Endpoint fails with webhook.ErrNotFound for an unknown id.
	Endpoint(ctx context.Context, tenant string, id int64) (webhook.Endpoint, error)
	// Endpoints lists every endpoint of the tenant by id.
	Endpoints(ctx context.Context, tenant string) ([]webhook.Endpoint, error)
	// UpdateEndpoint replaces URL, description, events, enabled, secret and UpdatedAt of the
	// endpoint e.ID; webhook.ErrNotFound for an unknown id.
	UpdateEndpoint(ctx context.Context, tenant string, e webhook.Endpoint) error
	// DeleteEndpoint removes it; webhook.ErrNotFound for an unknown id.
	DeleteEndpoint(ctx context.Context, tenant string, id int64) error
}
