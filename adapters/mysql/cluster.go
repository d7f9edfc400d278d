// Package mysql is the MySQL/MariaDB adapter: one database per tenant, on the cluster's server or
// on the server the tenant names, the
// sqlc-generated queries, the month-table wrapper, the group-commit writer of the message store,
// the directory and the shard manager's DDL (DESIGN §2, §3).
package mysql

import (
	"context"
	"crypto/tls"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/imdhq/imd/adapters/mysql/sqlcdb"
	"github.com/imdhq/imd/core/domain/tenant"
)

// ErrUnknownTenant: the tenant was never provisioned in this process.
var ErrUnknownTenant = errors.New("tenant not provisioned")

// databaseRE is the whitelist for database names: they are spliced into CREATE DATABASE.
var databaseRE = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)

// defaultMaxOpenConns bounds each tenant pool when the config leaves it unset.
const defaultMaxOpenConns = 32

// Cluster owns one connection pool per tenant database, on the default server or on each
// tenant's own.
type Cluster struct {
	server       mysql.Config // parsed default server DSN; DBName is set per tenant
	tls          *tls.Config  // nil: the DSN's own tls parameter, if any
	maxOpenConns int

	provisioning sync.Mutex // one Provision at a time: it is rare and runs DDL

	mu      sync.RWMutex
	tenants map[string]*tenantDB
}

// tenantDB is one tenant's database: its pool and its cache of registered month tables.
type tenantDB struct {
	name   string
	dsn    string // the tenant's server as provisioned; "" the default
	db     *sql.DB
	q      *sqlcdb.Queries
	months *monthCatalog
}

// Open prepares a cluster on the server named by dsn (a go-sql-driver DSN; its database part,
// if any, is ignored). maxOpenConns bounds each tenant's pool (0 = default). Nothing connects
// until Provision.
func Open(dsn string, maxOpenConns int, opts ...Option) (*Cluster, error) {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("parse mysql dsn: %w", err)
	}
	if maxOpenConns <= 0 {
		maxOpenConns = defaultMaxOpenConns
	}
	c := &Cluster{server: *cfg, maxOpenConns: maxOpenConns, tenants: make(map[string]*tenantDB)}
	for _, opt := range opts {
		opt(c)
	}
	return c, nil
}

// Option adjusts a cluster's connections.
type Option func(*Cluster)

// WithTLS connects over TLS with c (nil leaves the DSN's choice). It is set on each
// connector, not registered with the driver by name: no process-wide state.
func WithTLS(c *tls.Config) Option {
	return func(cl *Cluster) { cl.tls = c }
}

// Provision makes the tenant usable: it creates its database if missing, migrates the schema up
// and opens the pool. dsn names the server holding the database (a go-sql-driver DSN, its
// database part ignored, TLS as the cluster's); "" is the cluster's own. Idempotent, and safe
// to run on every start and on several nodes at once (migrations hold a database lock).
func (c *Cluster) Provision(ctx context.Context, tenantName, database, dsn string) error {
	if !tenant.Valid(tenantName) {
		return fmt.Errorf("provision: invalid tenant name %q", tenantName)
	}
	if !databaseRE.MatchString(database) {
		return fmt.Errorf("provision %s: invalid database name %q", tenantName, database)
	}
	c.provisioning.Lock()
	defer c.provisioning.Unlock()

	c.mu.RLock()
	known, ok := c.tenants[tenantName]
	c.mu.RUnlock()
	if ok {
		if known.name != database || known.dsn != dsn {
			return fmt.Errorf("provision %s: already uses database %s on another server or under another name than %s", tenantName, known.name, database)
		}
		return nil
	}

	server, err := c.serverOf(dsn)
	if err != nil {
		return fmt.Errorf("provision %s: %w", tenantName, err)
	}
	if err := c.createDatabase(ctx, server, database); err != nil {
		return fmt.Errorf("provision %s: %w", tenantName, err)
	}
	if err := c.migrateUp(ctx, server, database); err != nil {
		return fmt.Errorf("provision %s: %w", tenantName, err)
	}
	t, err := c.openTenant(ctx, server, database)
	if err != nil {
		return fmt.Errorf("provision %s: %w", tenantName, err)
	}
	t.dsn = dsn
	c.mu.Lock()
	c.tenants[tenantName] = t
	c.mu.Unlock()
	return nil
}

// serverOf is the server named by dsn, the cluster's own for "". An error never quotes the
// DSN: it may hold a password.
func (c *Cluster) serverOf(dsn string) (*mysql.Config, error) {
	if dsn == "" {
		return &c.server, nil
	}
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, errors.New("the tenant's server dsn does not parse")
	}
	return cfg, nil
}

func (c *Cluster) createDatabase(ctx context.Context, server *mysql.Config, database string) error {
	db, err := c.open(server, "", false)
	if err != nil {
		return fmt.Errorf("open server: %w", err)
	}
	defer db.Close()
	// The name passed databaseRE, so splicing it is safe; identifiers cannot be bound.
	stmt := "CREATE DATABASE IF NOT EXISTS `" + database + "` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci"
	if _, err := db.ExecContext(ctx, stmt); err != nil {
		return fmt.Errorf("create database %s: %w", database, err)
	}
	return nil
}

func (c *Cluster) openTenant(ctx context.Context, server *mysql.Config, database string) (*tenantDB, error) {
	db, err := c.open(server, database, false)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", database, err)
	}
	db.SetMaxOpenConns(c.maxOpenConns)
	db.SetMaxIdleConns(c.maxOpenConns)
	db.SetConnMaxIdleTime(5 * time.Minute)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("ping %s: %w", database, err)
	}
	q := sqlcdb.New(db)
	t := &tenantDB{name: database, db: db, q: q, months: newMonthCatalog(q.RegisteredMonths)}
	if err := t.months.refresh(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("load catalog of %s: %w", database, err)
	}
	return t, nil
}

// open is a pool on one database of a server. Times are UTC both ways, and arguments are
// interpolated client-side, which saves a prepare round trip per statement. Only migrations
// get multi-statements.
func (c *Cluster) open(server *mysql.Config, database string, multiStatements bool) (*sql.DB, error) {
	cfg := server.Clone()
	cfg.DBName = database
	cfg.ParseTime = true
	cfg.Loc = time.UTC
	cfg.InterpolateParams = true
	cfg.MultiStatements = multiStatements
	// The collation of the tables, so string parameters compare without conversion.
	cfg.Collation = "utf8mb4_unicode_ci"
	if cfg.Params == nil {
		cfg.Params = make(map[string]string)
	}
	// DEFAULT CURRENT_TIMESTAMP columns must be UTC like the values the adapter writes.
	cfg.Params["time_zone"] = "'+00:00'"
	if c.tls != nil {
		cfg.TLS = c.tls
	}
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	return sql.OpenDB(conn), nil
}

// tenant returns the provisioned database of a tenant.
func (c *Cluster) tenant(name string) (*tenantDB, error) {
	c.mu.RLock()
	t, ok := c.tenants[name]
	c.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownTenant, name)
	}
	return t, nil
}

// Close closes every tenant pool. Close the message store first so its writers drain.
func (c *Cluster) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for name, t := range c.tenants {
		if err := t.db.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close %s: %w", name, err))
		}
		delete(c.tenants, name)
	}
	return errors.Join(errs...)
}
