package memory

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/tenant"
	"github.com/imdhq/imd/ports"
)

// TenantStore is the in-memory tenant registry.
type TenantStore struct {
	mu      sync.Mutex
	tenants map[string]tenant.Info
}

var _ ports.TenantStore = (*TenantStore)(nil)

// NewTenantStore returns an empty registry.
func NewTenantStore() *TenantStore { return &TenantStore{tenants: make(map[string]tenant.Info)} }

// Tenants lists the provisioned tenants by name.
func (s *TenantStore) Tenants(context.Context) ([]tenant.Info, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]tenant.Info, 0, len(s.tenants))
	for _, t := range s.tenants {
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b tenant.Info) int { return cmp.Compare(a.Name, b.Name) })
	return out, nil
}

// AddTenant records a tenant; the same tenant again is a no-op, a taken name or database a
// conflict.
func (s *TenantStore) AddTenant(_ context.Context, t tenant.Info) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if known, ok := s.tenants[t.Name]; ok {
		if known.Database != t.Database || known.DSN != t.DSN {
			return apperr.New(apperr.Conflict, fmt.Sprintf("tenant %s uses database %s on another server", t.Name, known.Database))
		}
		return nil
	}
	for _, known := range s.tenants {
		if known.Database == t.Database {
			return apperr.New(apperr.Conflict, fmt.Sprintf("database %s belongs to another tenant", t.Database))
		}
	}
	if t.CreatedAt.IsZero() {
		t.CreatedAt = time.Now()
	}
	t.Source, t.CreatedAt = tenant.Provisioned, t.CreatedAt.UTC().Truncate(time.Millisecond)
	s.tenants[t.Name] = t
	return nil
}
