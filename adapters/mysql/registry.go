package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/imdhq/imd/adapters/mysql/registrydb"
	"github.com/imdhq/imd/core/apperr"
	"github.com/imdhq/imd/core/tenant"
	"github.com/imdhq/imd/ports"
	"github.com/imdhq/imd/sql/registry"
)

// TenantRegistry implements ports.TenantStore over the registry database (default
// imd_registry) on the cluster's server: the tenants provisioned through the admin API, shared
// by every node. Open it before use.
type TenantRegistry struct {
	cluster  *Cluster
	database string
	db       *sql.DB
	q        *registrydb.Queries
	now      func() time.Time
}

var _ ports.TenantStore = (*TenantRegistry)(nil)

// NewTenantRegistry returns the registry in database on the cluster's server; nothing connects
// until Open.
func NewTenantRegistry(c *Cluster, database string) *TenantRegistry {
	return &TenantRegistry{cluster: c, database: database, now: func() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }}
}

// Open creates the registry database and its table if missing and connects.
func (r *TenantRegistry) Open(ctx context.Context) error {
	if !tenant.ValidDatabase(r.database) {
		return fmt.Errorf("tenant registry: invalid database name %q", r.database)
	}
	if err := r.cluster.createDatabase(ctx, r.database); err != nil {
		return fmt.Errorf("tenant registry: %w", err)
	}
	db, err := r.cluster.open(r.database, false)
	if err != nil {
		return fmt.Errorf("tenant registry: open %s: %w", r.database, err)
	}
	// Read at start and on a slow refresh only.
	db.SetMaxOpenConns(2)
	if _, err := db.ExecContext(ctx, registry.Schema); err != nil {
		db.Close()
		return fmt.Errorf("tenant registry: create tables in %s: %w", r.database, err)
	}
	r.db, r.q = db, registrydb.New(db)
	return nil
}

// Tenants lists the provisioned tenants by name.
func (r *TenantRegistry) Tenants(ctx context.Context) ([]tenant.Info, error) {
	rows, err := r.q.ListTenants(ctx)
	if err != nil {
		return nil, fmt.Errorf("list tenants: %w", err)
	}
	out := make([]tenant.Info, len(rows))
	for i, row := range rows {
		out[i] = tenant.Info{Name: row.Name, Database: row.DatabaseName, Source: tenant.Provisioned, CreatedAt: row.CreatedAt.UTC()}
	}
	return out, nil
}

// AddTenant records a provisioned tenant; the same pair again is a no-op, a taken name or
// database a conflict.
func (r *TenantRegistry) AddTenant(ctx context.Context, t tenant.Info) error {
	created := t.CreatedAt
	if created.IsZero() {
		created = r.now()
	}
	err := r.q.InsertTenant(ctx, registrydb.InsertTenantParams{Name: t.Name, DatabaseName: t.Database, CreatedAt: created.UTC()})
	if !isDuplicate(err, "") {
		if err != nil {
			return fmt.Errorf("add tenant %s: %w", t.Name, err)
		}
		return nil
	}
	known, err := r.q.TenantByName(ctx, t.Name)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return apperr.New(apperr.Conflict, fmt.Sprintf("database %s belongs to another tenant", t.Database))
	case err != nil:
		return fmt.Errorf("add tenant %s: %w", t.Name, err)
	case known.DatabaseName != t.Database:
		return apperr.New(apperr.Conflict, fmt.Sprintf("tenant %s uses database %s", t.Name, known.DatabaseName))
	}
	return nil
}

// Close closes the registry pool, if open.
func (r *TenantRegistry) Close() error {
	if r.db == nil {
		return nil
	}
	return r.db.Close()
}
