package tenantregistry_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/memory"
	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/tenant"
	"github.com/imdhq/imd/core/usecase/tenantregistry"
)

// activations records what the registry asked to activate, failing for names in fail.
type activations struct {
	mu   sync.Mutex
	got  []string
	fail map[string]bool
}

func (a *activations) activate(_ context.Context, t tenant.Info) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.fail[t.Name] {
		return errors.New("storage down")
	}
	a.got = append(a.got, t.Name)
	return nil
}

func newRegistry(t *testing.T, store *memory.TenantStore, act *activations) *tenantregistry.Registry {
	t.Helper()
	r, err := tenantregistry.New(tenantregistry.Config{
		Configured: []tenant.Info{{Name: "main"}, {Name: "beta", Database: "db_beta"}},
		Reserved:   []string{"imd_registry"},
	}, tenantregistry.Deps{Store: store, Activate: act.activate, Clock: memory.NewClock(time.Now()), Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// otherServer is the DSN of a tenant placed on another MySQL server.
const otherServer = "imd:imd@tcp(10.0.0.2:3306)/?parseTime=true"

func TestProvision(t *testing.T) {
	tests := []struct {
		name, tenant, database, dsn string
		want                        apperr.Code
		created                     bool
	}{
		{"new tenant, default database", "gamma", "", "", apperr.OK, true},
		{"new tenant, named database", "delta", "db_delta", "", apperr.OK, true},
		{"new tenant on another server", "theta", "", otherServer, apperr.OK, true},
		{"configured tenant, same database", "main", "imd_main", "", apperr.OK, false},
		{"configured tenant, other database", "main", "db_other", "", apperr.Conflict, false},
		{"configured tenant, other server", "main", "imd_main", otherServer, apperr.Conflict, false},
		{"database of another tenant", "epsilon", "db_beta", "", apperr.Conflict, false},
		{"database of another tenant, on another server", "epsilon", "db_beta", otherServer, apperr.Conflict, false},
		{"the registry's database", "zeta", "imd_registry", "", apperr.InvalidArgument, false},
		{"a server schema", "eta", "mysql", "", apperr.InvalidArgument, false},
		{"invalid name", "Bad-Name", "", "", apperr.InvalidArgument, false},
		{"name with a brace", "a{b}", "", "", apperr.InvalidArgument, false},
		{"activation fails", "broken", "", "", apperr.Busy, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store, act := memory.NewTenantStore(), &activations{fail: map[string]bool{"broken": true}}
			r := newRegistry(t, store, act)
			got, created, err := r.Provision(context.Background(), tt.tenant, tt.database, tt.dsn)
			if code := apperr.CodeOf(err); code != tt.want || created != tt.created {
				t.Fatalf("Provision = %+v, %v, %v; want code %d, created %v", got, created, err, tt.want, tt.created)
			}
			stored, _ := store.Tenants(context.Background())
			if tt.created != r.Known(tt.tenant) && tt.tenant != "main" {
				t.Fatalf("Known(%s) = %v after created=%v", tt.tenant, r.Known(tt.tenant), tt.created)
			}
			if tt.created && (len(stored) != 1 || stored[0].Name != tt.tenant || stored[0].DSN != tt.dsn || !slices.Equal(act.got, []string{tt.tenant})) {
				t.Fatalf("stored %+v, activated %v", stored, act.got)
			}
			if !tt.created && len(stored) != 0 {
				t.Fatalf("nothing may be recorded, got %+v", stored)
			}
		})
	}
}

func TestProvisionAgainIsHarmless(t *testing.T) {
	store, act := memory.NewTenantStore(), &activations{}
	r := newRegistry(t, store, act)
	ctx := context.Background()
	if _, created, err := r.Provision(ctx, "gamma", "", otherServer); err != nil || !created {
		t.Fatalf("first: %v, %v", created, err)
	}
	info, created, err := r.Provision(ctx, "gamma", "imd_gamma", otherServer)
	if err != nil || created || info.Database != "imd_gamma" || info.DSN != otherServer || info.Source != tenant.Provisioned {
		t.Fatalf("again: %+v, %v, %v", info, created, err)
	}
	if _, _, err := r.Provision(ctx, "gamma", "imd_gamma", ""); apperr.CodeOf(err) != apperr.Conflict {
		t.Fatalf("again on the default server: %v; want a conflict", err)
	}
	if len(act.got) != 1 {
		t.Fatalf("activated %v, want once", act.got)
	}
}

func TestLoadAndRefresh(t *testing.T) {
	ctx := context.Background()
	store := memory.NewTenantStore()
	for _, ti := range []tenant.Info{
		{Name: "gamma", Database: "imd_gamma"},
		{Name: "main", Database: "db_clash"}, // clashes with the configuration: ignored
	} {
		if err := store.AddTenant(ctx, ti); err != nil {
			t.Fatal(err)
		}
	}
	act := &activations{}
	r := newRegistry(t, store, act)
	if err := r.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if got := r.Names(); !slices.Equal(got, []string{"beta", "gamma", "main"}) {
		t.Fatalf("Names after Load = %v", got)
	}
	if len(act.got) != 0 {
		t.Fatalf("Load activated %v: boot starts tenants itself", act.got)
	}
	for _, ti := range r.List() {
		if ti.Name == "main" && (ti.Database != "imd_main" || ti.Source != tenant.FromConfig) {
			t.Fatalf("the configuration must win: %+v", ti)
		}
	}

	// Another node provisions: the refresh activates it here.
	if err := store.AddTenant(ctx, tenant.Info{Name: "delta", Database: "imd_delta"}); err != nil {
		t.Fatal(err)
	}
	act.fail = map[string]bool{"delta": true}
	if err := r.Refresh(ctx); err == nil || r.Known("delta") {
		t.Fatalf("a failed activation must not be served: err %v, known %v", err, r.Known("delta"))
	}
	act.fail = nil
	if err := r.Refresh(ctx); err != nil || !r.Known("delta") {
		t.Fatalf("Refresh: %v, known %v", err, r.Known("delta"))
	}
	if !slices.Equal(act.got, []string{"delta"}) {
		t.Fatalf("activated %v, want [delta]", act.got)
	}
	if r.Known("other") {
		t.Fatal("unknown tenants are not served")
	}
}

func TestBootActivatesConfiguredAndProvisionedTenants(t *testing.T) {
	ctx := context.Background()
	store := memory.NewTenantStore()
	if err := store.AddTenant(ctx, tenant.Info{Name: "gamma", Database: "imd_gamma"}); err != nil {
		t.Fatal(err)
	}
	act := &activations{}
	if err := newRegistry(t, store, act).Boot(ctx); err != nil {
		t.Fatal(err)
	}
	if got := slices.Sorted(slices.Values(act.got)); !slices.Equal(got, []string{"beta", "gamma", "main"}) {
		t.Errorf("Boot activated %v", got)
	}

	failing := &activations{fail: map[string]bool{"gamma": true}}
	if err := newRegistry(t, store, failing).Boot(ctx); err == nil {
		t.Error("Boot went on past a failed activation")
	}
}

func TestInvalidConfiguration(t *testing.T) {
	_, err := tenantregistry.New(tenantregistry.Config{Configured: []tenant.Info{{Name: "a", Database: "db"}, {Name: "b", Database: "db"}}},
		tenantregistry.Deps{Store: memory.NewTenantStore(), Log: slog.New(slog.DiscardHandler)})
	if err == nil {
		t.Fatal("two configured tenants on one database must be refused")
	}
}
