package memory

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/imdhq/imd/core/domain/webhook"
	"github.com/imdhq/imd/ports"
)

// WebhookEndpoints is the in-memory endpoint registry.
type WebhookEndpoints struct {
	mu      sync.Mutex
	tenants map[string]map[int64]webhook.Endpoint
}

var _ ports.WebhookEndpoints = (*WebhookEndpoints)(nil)

// NewWebhookEndpoints returns an empty registry.
func NewWebhookEndpoints() *WebhookEndpoints {
	return &WebhookEndpoints{tenants: make(map[string]map[int64]webhook.Endpoint)}
}

// CreateEndpoint stores a copy of e.
func (s *WebhookEndpoints) CreateEndpoint(_ context.Context, tenant string, e webhook.Endpoint) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	all := s.tenants[tenant]
	if all == nil {
		all = make(map[int64]webhook.Endpoint)
		s.tenants[tenant] = all
	}
	if _, ok := all[e.ID]; ok {
		return fmt.Errorf("create webhook endpoint %d: id taken", e.ID)
	}
	all[e.ID] = cloneEndpoint(e)
	return nil
}

// Endpoint returns a copy of the endpoint id.
func (s *WebhookEndpoints) Endpoint(_ context.Context, tenant string, id int64) (webhook.Endpoint, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.tenants[tenant][id]
	if !ok {
		return webhook.Endpoint{}, webhook.ErrNotFound
	}
	return cloneEndpoint(e), nil
}

// Endpoints lists copies by id.
func (s *WebhookEndpoints) Endpoints(_ context.Context, tenant string) ([]webhook.Endpoint, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	all := s.tenants[tenant]
	out := make([]webhook.Endpoint, 0, len(all))
	for _, id := range slices.Sorted(maps.Keys(all)) {
		out = append(out, cloneEndpoint(all[id]))
	}
	return out, nil
}

// UpdateEndpoint replaces the endpoint's settable fields, keeping CreatedAt.
func (s *WebhookEndpoints) UpdateEndpoint(_ context.Context, tenant string, e webhook.Endpoint) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.tenants[tenant][e.ID]
	if !ok {
		return webhook.ErrNotFound
	}
	e.CreatedAt = old.CreatedAt
	s.tenants[tenant][e.ID] = cloneEndpoint(e)
	return nil
}

// DeleteEndpoint removes the endpoint id.
func (s *WebhookEndpoints) DeleteEndpoint(_ context.Context, tenant string, id int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.tenants[tenant][id]; !ok {
		return webhook.ErrNotFound
	}
	delete(s.tenants[tenant], id)
	return nil
}

// cloneEndpoint copies the event slice so a caller's later change cannot reach the store.
func cloneEndpoint(e webhook.Endpoint) webhook.Endpoint {
	e.Events = slices.Clone(e.Events)
	return e
}
