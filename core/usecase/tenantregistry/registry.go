// Package tenantregistry knows every tenant the deployment serves (DESIGN §1): the configured ones and
// those provisioned through the admin API, which a shared registry keeps so every node and
// every restart knows them. Requests for any other tenant are refused before they reach a
// database.
package tenantregistry

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/tenant"
	"github.com/imdhq/imd/core/kit/periodic"
	"github.com/imdhq/imd/ports"
)

// Activator makes a tenant servable on this node: its database, its month tables and its
// background workers. The registry calls it for tenants that appear after boot; it must be
// idempotent, since a failed provisioning is retried.
type Activator func(ctx context.Context, t tenant.Info) error

// Config of the registry.
type Config struct {
	// Configured are the tenants of the configuration.
	Configured []tenant.Info
	// Reserved are databases no tenant may use, e.g. the registry's own.
	Reserved []string
}

// Deps are what the registry uses.
type Deps struct {
	Store    ports.TenantStore
	Activate Activator
	Clock    ports.Clock
	Log      *slog.Logger
}

// Registry is the set of served tenants.
type Registry struct {
	cfg Config
	d   Deps

	provisioning sync.Mutex // one provisioning or refresh at a time: both run DDL

	mu    sync.RWMutex
	known map[string]tenant.Info
}

// New returns a registry of the configured tenants; Load adds the provisioned ones.
func New(cfg Config, d Deps) (*Registry, error) {
	r := &Registry{cfg: cfg, d: d, known: make(map[string]tenant.Info)}
	for _, t := range cfg.Configured {
		if t.Database == "" {
			t.Database = tenant.DefaultDatabase(t.Name)
		}
		t.Source = tenant.FromConfig
		if err := r.admissible(t); err != nil {
			return nil, fmt.Errorf("configured tenant %s: %w", t.Name, err)
		}
		r.known[t.Name] = t
	}
	return r, nil
}

// admissible checks a tenant against the rules and the tenants known so far.
func (r *Registry) admissible(t tenant.Info) error {
	if !tenant.Valid(t.Name) {
		return apperr.New(apperr.InvalidArgument, "tenant must match ^[a-z][a-z0-9_]{0,30}$")
	}
	if !tenant.ValidDatabase(t.Database) || slices.Contains(r.cfg.Reserved, t.Database) {
		return apperr.New(apperr.InvalidArgument, "database must match ^[a-z][a-z0-9_]{0,63}$ and not be reserved")
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, k := range r.known {
		if k.Name == t.Name {
			return apperr.New(apperr.Conflict, fmt.Sprintf("tenant %s exists", t.Name))
		}
		if k.Database == t.Database {
			return apperr.New(apperr.Conflict, fmt.Sprintf("database %s belongs to tenant %s", t.Database, k.Name))
		}
	}
	return nil
}

// Load adds the provisioned tenants of the store, at boot, before the node serves: they are
// then started with the configured ones. A stored tenant clashing with the configuration is
// left out (the configuration wins) and logged.
func (r *Registry) Load(ctx context.Context) error {
	stored, err := r.d.Store.Tenants(ctx)
	if err != nil {
		return fmt.Errorf("load tenant registry: %w", err)
	}
	for _, t := range stored {
		r.mu.RLock()
		known, ok := r.known[t.Name]
		r.mu.RUnlock()
		if ok && known.Database == t.Database && known.DSN == t.DSN {
			continue
		}
		if err := r.admissible(t); err != nil {
			r.d.Log.ErrorContext(ctx, "provisioned tenant ignored", "tenant", t.Name, "database", t.Database, "err", err)
			continue
		}
		r.add(t)
	}
	return nil
}

// Boot loads the provisioned tenants and activates every tenant the registry knows,
// configured and provisioned alike, before the node serves; an activation that fails fails
// the boot.
func (r *Registry) Boot(ctx context.Context) error {
	if err := r.Load(ctx); err != nil {
		return err
	}
	for _, t := range r.List() {
		if err := r.d.Activate(ctx, t); err != nil {
			return err
		}
	}
	return nil
}

func (r *Registry) add(t tenant.Info) {
	r.mu.Lock()
	r.known[t.Name] = t
	r.mu.Unlock()
}

// Known reports whether the deployment serves the tenant.
func (r *Registry) Known(name string) bool {
	r.mu.RLock()
	_, ok := r.known[name]
	r.mu.RUnlock()
	return ok
}

// List returns the served tenants by name.
func (r *Registry) List() []tenant.Info {
	r.mu.RLock()
	out := make([]tenant.Info, 0, len(r.known))
	for _, t := range r.known {
		out = append(out, t)
	}
	r.mu.RUnlock()
	slices.SortFunc(out, func(a, b tenant.Info) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// Names returns the served tenant names, sorted.
func (r *Registry) Names() []string {
	list := r.List()
	out := make([]string, len(list))
	for i, t := range list {
		out[i] = t.Name
	}
	return out
}

// Provision creates a tenant: its database, schema, first month tables and workers, then
// records it so every node serves it. database "" means the default imd_<name>; dsn "" the
// deployment's own server, else the server the tenant's database lives on. Provisioning a known
// tenant again with the same database and server returns it with created=false.
func (r *Registry) Provision(ctx context.Context, name, database, dsn string) (t tenant.Info, created bool, err error) {
	if database == "" {
		database = tenant.DefaultDatabase(name)
	}
	r.provisioning.Lock()
	defer r.provisioning.Unlock()
	r.mu.RLock()
	known, ok := r.known[name]
	r.mu.RUnlock()
	if ok && known.Database == database && known.DSN == dsn {
		return known, false, nil
	}
	t = tenant.Info{Name: name, Database: database, DSN: dsn, Source: tenant.Provisioned, CreatedAt: r.d.Clock.Now().UTC().Truncate(time.Millisecond)}
	if err := r.admissible(t); err != nil {
		return tenant.Info{}, false, err
	}
	// Usable before recorded: other nodes pick up recorded tenants, and must find them ready.
	if err := r.d.Activate(ctx, t); err != nil {
		return tenant.Info{}, false, apperr.Wrap(apperr.Busy, "provisioning failed, retry", fmt.Errorf("activate tenant %s: %w", name, err))
	}
	if err := r.d.Store.AddTenant(ctx, t); err != nil {
		if apperr.CodeOf(err) == apperr.Conflict {
			return tenant.Info{}, false, err
		}
		return tenant.Info{}, false, apperr.Wrap(apperr.Busy, "tenant registry unavailable, retry", err)
	}
	r.add(t)
	r.d.Log.InfoContext(ctx, "tenant provisioned", "tenant", name, "database", database)
	return t, true, nil
}

// Refresh starts the tenants other nodes provisioned since this node last looked.
func (r *Registry) Refresh(ctx context.Context) error {
	stored, err := r.d.Store.Tenants(ctx)
	if err != nil {
		return fmt.Errorf("read tenant registry: %w", err)
	}
	r.provisioning.Lock()
	defer r.provisioning.Unlock()
	var errs []error
	for _, t := range stored {
		if r.Known(t.Name) {
			continue
		}
		if err := r.admissible(t); err != nil {
			r.d.Log.ErrorContext(ctx, "provisioned tenant ignored", "tenant", t.Name, "database", t.Database, "err", err)
			continue
		}
		if err := r.d.Activate(ctx, t); err != nil {
			errs = append(errs, fmt.Errorf("activate tenant %s: %w", t.Name, err))
			continue
		}
		r.add(t)
		r.d.Log.InfoContext(ctx, "tenant discovered", "tenant", t.Name, "database", t.Database)
	}
	if len(errs) > 0 {
		return fmt.Errorf("refresh tenants: %w", errors.Join(errs...))
	}
	return nil
}

// Run refreshes every interval until ctx ends.
func (r *Registry) Run(ctx context.Context, interval time.Duration) {
	periodic.Every(ctx, interval, func(ctx context.Context) {
		if err := r.Refresh(ctx); err != nil && ctx.Err() == nil {
			r.d.Log.WarnContext(ctx, "tenant refresh failed", "err", err)
		}
	})
}
