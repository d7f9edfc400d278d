package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"

	"github.com/imdhq/imd/adapters/mysql/sqlcdb"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/shard"
)

// monthCatalog caches which month tables the tenant's catalog registers. A month table is
// queried only when registered (seed 000 §8), and the catalog only grows, so a hit never
// needs a round trip and a miss refreshes once.
type monthCatalog struct {
	load func(context.Context) ([]string, error) // catalog months as YYYYMM

	mu    sync.RWMutex
	known map[month.Month]bool
}

func newMonthCatalog(load func(context.Context) ([]string, error)) *monthCatalog {
	return &monthCatalog{load: load, known: make(map[month.Month]bool)}
}

func (c *monthCatalog) refresh(ctx context.Context) error {
	names, err := c.load(ctx)
	if err != nil {
		return fmt.Errorf("read catalog: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range names {
		m, err := month.Parse(s)
		if err != nil {
			return fmt.Errorf("catalog row %q: %w", s, err)
		}
		c.known[m] = true
	}
	return nil
}

func (c *monthCatalog) add(m month.Month) {
	c.mu.Lock()
	c.known[m] = true
	c.mu.Unlock()
}

func (c *monthCatalog) registered(m month.Month) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.known[m]
}

// table returns the physical table of m after the three checks of seed 000 §8: a valid month,
// the name whitelist, and registration in the catalog (shard.ErrMonthMissing otherwise).
func (c *monthCatalog) table(ctx context.Context, m month.Month) (string, error) {
	name, err := m.Table()
	if err != nil {
		return "", err
	}
	if _, err := month.ParseTable(name); err != nil {
		return "", err
	}
	if c.registered(m) {
		return name, nil
	}
	if err := c.refresh(ctx); err != nil {
		return "", err
	}
	if !c.registered(m) {
		return "", fmt.Errorf("%w: %s not in catalog", shard.ErrMonthMissing, name)
	}
	return name, nil
}

// on returns db (a pool or a transaction) with queries sent to m's table. Never call WithTx on
// queries built over it: that would bypass the rewrite; wrap the *sql.Tx instead.
func (c *monthCatalog) on(ctx context.Context, db sqlcdb.DBTX, m month.Month) (sqlcdb.DBTX, error) {
	name, err := c.table(ctx, m)
	if err != nil {
		return nil, err
	}
	return monthTable{db: db, table: name}, nil
}

// monthTable is a DBTX that sends queries written against im_group_messages_tpl to one
// validated month table (sqlc has no dynamic table names: sqlc issues #1179, #2823).
type monthTable struct {
	db    sqlcdb.DBTX
	table string
}

func (t monthTable) rewrite(query string) string {
	return strings.ReplaceAll(query, month.TemplateTable, t.table)
}

func (t monthTable) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return t.db.ExecContext(ctx, t.rewrite(query), args...)
}

func (t monthTable) PrepareContext(ctx context.Context, query string) (*sql.Stmt, error) {
	return t.db.PrepareContext(ctx, t.rewrite(query))
}

func (t monthTable) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return t.db.QueryContext(ctx, t.rewrite(query), args...)
}

func (t monthTable) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	return t.db.QueryRowContext(ctx, t.rewrite(query), args...)
}
