package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/imdhq/imd/adapters/mysql/registrydb"
	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/tenant"
	"github.com/imdhq/imd/ports"
	"github.com/imdhq/imd/sql/registry"
)

// TenantRegistry implements ports.TenantStore over the registry database (default
// imd_registry) on the cluster's server: the tenants provisioned through the admin API and the
// server each lives on, shared by every node. Open it before use.
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
	if err := r.cluster.createDatabase(ctx, &r.cluster.server, r.database); err != nil {
		return fmt.Errorf("tenant registry: %w", err)
	}
	if err := r.createTables(ctx); err != nil {
		return fmt.Errorf("tenant registry: create tables in %s: %w", r.database, err)
	}
	db, err := r.cluster.open(&r.cluster.server, r.database, false)
	if err != nil {
		return fmt.Errorf("tenant registry: open %s: %w", r.database, err)
	}
	// Read at start and on a slow refresh only.
	db.SetMaxOpenConns(2)
	r.db, r.q = db, registrydb.New(db)
	return nil
}

// createTables runs the schema's statements on a connection of their own: only it allows
// several statements at once.
func (r *TenantRegistry) createTables(ctx context.Context) error {
	ddl, err := r.cluster.open(&r.cluster.server, r.database, true)
	if err != nil {
		return err
	}
	defer ddl.Close()
	_, err = ddl.ExecContext(ctx, registry.Schema)
	return err
}

// Tenants lists the provisioned tenants by name.
func (r *TenantRegistry) Tenants(ctx context.Context) ([]tenant.Info, error) {
	rows, err := r.q.ListTenants(ctx)
	if err != nil {
		return nil, fmt.Errorf("list tenants: %w", err)
	}
	out := make([]tenant.Info, len(rows))
	for i, row := range rows {
		out[i] = tenant.Info{Name: row.Name, Database: row.DatabaseName, DSN: row.Dsn, Source: tenant.Provisioned, CreatedAt: row.CreatedAt.UTC()}
	}
	return out, nil
}

// AddTenant records a provisioned tenant and its server; the same tenant again is a no-op, a
// taken name or database a conflict.
func (r *TenantRegistry) AddTenant(ctx context.Context, t tenant.Info) error {
	err := r.insert(ctx, t)
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
	case known.Dsn != t.DSN:
		return apperr.New(apperr.Conflict, fmt.Sprintf("tenant %s lives on another server", t.Name))
	}
	return nil
}

// insert writes the tenant and, when it is not on the default server, its server in one
// transaction: a tenant is never recorded without where it lives.
func (r *TenantRegistry) insert(ctx context.Context, t tenant.Info) error {
	created := t.CreatedAt
	if created.IsZero() {
		created = r.now()
	}
	tx, err := r.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() // a no-op after Commit
	q := r.q.WithTx(tx)
	if err := q.InsertTenant(ctx, registrydb.InsertTenantParams{Name: t.Name, DatabaseName: t.Database, CreatedAt: created.UTC()}); err != nil {
		return err
	}
	if t.DSN != "" {
		if err := q.InsertTenantServer(ctx, registrydb.InsertTenantServerParams{Name: t.Name, Dsn: t.DSN}); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// Close closes the registry pool, if open.
func (r *TenantRegistry) Close() error {
	if r.db == nil {
		return nil
	}
	return r.db.Close()
}
