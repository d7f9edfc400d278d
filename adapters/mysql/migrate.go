package mysql

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-sql-driver/mysql"
	"github.com/golang-migrate/migrate/v4"
	migratemysql "github.com/golang-migrate/migrate/v4/database/mysql"
	"github.com/golang-migrate/migrate/v4/source/iofs"

	"github.com/imdhq/imd/sql/schema"
)

// migrateUp applies the embedded schema migrations to one database. The migrate driver holds a
// named database lock, so nodes starting together migrate once.
func (c *Cluster) migrateUp(ctx context.Context, server *mysql.Config, database string) error {
	db, err := c.open(server, database, true)
	if err != nil {
		return fmt.Errorf("open %s for migrations: %w", database, err)
	}
	defer db.Close()
	// One dedicated connection: the migrate driver releases its lock on the connection that took it.
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("connect %s for migrations: %w", database, err)
	}
	driver, err := migratemysql.WithConnection(ctx, conn, &migratemysql.Config{DatabaseName: database})
	if err != nil {
		conn.Close()
		return fmt.Errorf("migration driver for %s: %w", database, err)
	}
	src, err := iofs.New(schema.FS, ".")
	if err != nil {
		driver.Close()
		return fmt.Errorf("migration source: %w", err)
	}
	m, err := migrate.NewWithInstance("iofs", src, "mysql", driver)
	if err != nil {
		src.Close()
		driver.Close()
		return fmt.Errorf("migrations for %s: %w", database, err)
	}
	defer m.Close()
	if err := m.Up(); err != nil && !errors.Is(err, migrate.ErrNoChange) {
		return fmt.Errorf("migrate %s up: %w", database, err)
	}
	return nil
}
