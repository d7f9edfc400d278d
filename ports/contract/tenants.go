package contract

import (
	"context"
	"testing"

	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/tenant"
	"github.com/imdhq/imd/ports"
)

// TenantStoreFactory returns an empty tenant registry.
type TenantStoreFactory func(t *testing.T) ports.TenantStore

// TenantStore runs the tenant registry contract: names and databases are unique, adding the
// same tenant again is harmless, and each tenant's server (DSN) is kept.
func TenantStore(t *testing.T, newStore TenantStoreFactory) {
	s := newStore(t)
	ctx := context.Background()
	if got, err := s.Tenants(ctx); err != nil || len(got) != 0 {
		t.Fatalf("Tenants of an empty registry = %v, %v", got, err)
	}
	const elsewhere = "imd:secret@tcp(10.0.0.2:3306)/?parseTime=true"
	for _, ti := range []tenant.Info{{Name: "zeta", Database: "db_zeta", DSN: elsewhere}, {Name: "alpha", Database: "db_alpha"}, {Name: "alpha", Database: "db_alpha"}, {Name: "zeta", Database: "db_zeta", DSN: elsewhere}} {
		if err := s.AddTenant(ctx, ti); err != nil {
			t.Fatalf("AddTenant %+v: %v", ti, err)
		}
	}
	for _, c := range []struct {
		name string
		ti   tenant.Info
	}{
		{"a known name with another database", tenant.Info{Name: "alpha", Database: "db_other"}},
		{"a known database under another name", tenant.Info{Name: "beta", Database: "db_alpha"}},
		{"a known tenant on another server", tenant.Info{Name: "alpha", Database: "db_alpha", DSN: elsewhere}},
		{"a known tenant moved back to the default server", tenant.Info{Name: "zeta", Database: "db_zeta"}},
	} {
		if err := s.AddTenant(ctx, c.ti); apperr.CodeOf(err) != apperr.Conflict {
			t.Errorf("AddTenant of %s: err = %v, want code %d", c.name, err, apperr.Conflict)
		}
	}
	got, err := s.Tenants(ctx)
	if err != nil {
		t.Fatalf("Tenants: %v", err)
	}
	if len(got) != 2 || got[0].Name != "alpha" || got[0].Database != "db_alpha" || got[0].DSN != "" || got[1].Name != "zeta" || got[1].DSN != elsewhere {
		t.Fatalf("Tenants = %+v, want alpha and zeta", got)
	}
	for _, ti := range got {
		if ti.Source != tenant.Provisioned || ti.CreatedAt.IsZero() {
			t.Fatalf("tenant %+v lacks source or creation time", ti)
		}
	}
}
