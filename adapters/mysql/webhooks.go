package mysql

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/imdhq/imd/adapters/mysql/sqlcdb"
	"github.com/imdhq/imd/core/domain/webhook"
	"github.com/imdhq/imd/ports"
)

// WebhookEndpoints implements ports.WebhookEndpoints over t_webhook_endpoints.
type WebhookEndpoints struct{ cluster *Cluster }

var _ ports.WebhookEndpoints = (*WebhookEndpoints)(nil)

// NewWebhookEndpoints returns the endpoint registry of the provisioned tenants of c.
func NewWebhookEndpoints(c *Cluster) *WebhookEndpoints { return &WebhookEndpoints{cluster: c} }

// CreateEndpoint inserts e.
func (s *WebhookEndpoints) CreateEndpoint(ctx context.Context, tenant string, e webhook.Endpoint) error {
	t, err := s.cluster.tenant(tenant)
	if err != nil {
		return err
	}
	events, err := json.Marshal(e.Events)
	if err != nil {
		return fmt.Errorf("encode events of webhook endpoint %d: %w", e.ID, err)
	}
	err = t.q.InsertWebhookEndpoint(ctx, sqlcdb.InsertWebhookEndpointParams{
		ID: e.ID, Url: e.URL, Description: e.Description, Events: string(events), Enabled: e.Enabled, Secret: e.Secret,
		CreatedAt: e.CreatedAt.UTC().Truncate(time.Millisecond), UpdatedAt: e.UpdatedAt.UTC().Truncate(time.Millisecond),
	})
	if err != nil {
		return fmt.Errorf("create webhook endpoint %d: %w", e.ID, err)
	}
	return nil
}

// Endpoint reads the endpoint id.
func (s *WebhookEndpoints) Endpoint(ctx context.Context, tenant string, id int64) (webhook.Endpoint, error) {
	t, err := s.cluster.tenant(tenant)
	if err != nil {
		return webhook.Endpoint{}, err
	}
	row, err := t.q.WebhookEndpoint(ctx, id)
	if errors.Is(err, sql.ErrNoRows) {
		return webhook.Endpoint{}, webhook.ErrNotFound
	}
	if err != nil {
		return webhook.Endpoint{}, fmt.Errorf("read webhook endpoint %d: %w", id, err)
	}
	return endpointOf(row)
}

// Endpoints lists the tenant's endpoints by id.
func (s *WebhookEndpoints) Endpoints(ctx context.Context, tenant string) ([]webhook.Endpoint, error) {
	t, err := s.cluster.tenant(tenant)
	if err != nil {
		return nil, err
	}
	rows, err := t.q.WebhookEndpoints(ctx)
	if err != nil {
		return nil, fmt.Errorf("list webhook endpoints: %w", err)
	}
	out := make([]webhook.Endpoint, len(rows))
	for i, r := range rows {
		if out[i], err = endpointOf(r); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// UpdateEndpoint rewrites the settable columns of e.ID.
func (s *WebhookEndpoints) UpdateEndpoint(ctx context.Context, tenant string, e webhook.Endpoint) error {
	t, err := s.cluster.tenant(tenant)
	if err != nil {
		return err
	}
	events, err := json.Marshal(e.Events)
	if err != nil {
		return fmt.Errorf("encode events of webhook endpoint %d: %w", e.ID, err)
	}
	n, err := t.q.UpdateWebhookEndpoint(ctx, sqlcdb.UpdateWebhookEndpointParams{
		ID: e.ID, Url: e.URL, Description: e.Description, Events: string(events), Enabled: e.Enabled, Secret: e.Secret,
		UpdatedAt: e.UpdatedAt.UTC().Truncate(time.Millisecond),
	})
	if err != nil {
		return fmt.Errorf("update webhook endpoint %d: %w", e.ID, err)
	}
	if n == 0 {
		// Affected rows count changed rows only; an update to the same values still matched.
		if _, err := s.Endpoint(ctx, tenant, e.ID); err != nil {
			return err
		}
	}
	return nil
}

// DeleteEndpoint removes the endpoint id.
func (s *WebhookEndpoints) DeleteEndpoint(ctx context.Context, tenant string, id int64) error {
	t, err := s.cluster.tenant(tenant)
	if err != nil {
		return err
	}
	n, err := t.q.DeleteWebhookEndpoint(ctx, id)
	if err != nil {
		return fmt.Errorf("delete webhook endpoint %d: %w", id, err)
	}
	if n == 0 {
		return webhook.ErrNotFound
	}
	return nil
}

func endpointOf(r sqlcdb.TWebhookEndpoint) (webhook.Endpoint, error) {
	var events []webhook.EventType
	if err := json.Unmarshal([]byte(r.Events), &events); err != nil {
		return webhook.Endpoint{}, fmt.Errorf("decode events of webhook endpoint %d: %w", r.ID, err)
	}
	return webhook.Endpoint{
		ID: r.ID, URL: r.Url, Description: r.Description, Events: events, Enabled: r.Enabled, Secret: r.Secret,
		CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(),
	}, nil
}
