package mysql

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/go-sql-driver/mysql"
)

// TestTenantsOnTwoServers: a tenant naming a server gets its database there, the others stay on
// the cluster's own; a tenant cannot move servers within one process.
func TestTenantsOnTwoServers(t *testing.T) {
	home, away := testDSN(t), envDSN(t, "IMD_TEST_MYSQL2_DSN")
	c, err := Open(home, 0)
	if err != nil {
		t.Fatal(err)
	}
	var raw [4]byte
	_, _ = rand.Read(raw[:])
	suffix := hex.EncodeToString(raw[:])
	tenants := []struct{ name, database, dsn string }{
		{"homed", "imdtest_home_" + suffix, ""},
		{"moved", "imdtest_away_" + suffix, away},
	}
	t.Cleanup(func() {
		c.Close()
		dropDatabase(t, home, tenants[0].database)
		dropDatabase(t, away, tenants[1].database)
	})
	ctx := context.Background()
	for _, tn := range tenants {
		if err := c.Provision(ctx, tn.name, tn.database, tn.dsn); err != nil {
			t.Fatalf("Provision %s: %v", tn.name, err)
		}
	}
	for _, server := range []struct {
		dsn        string
		has, hasnt string
	}{{home, tenants[0].database, tenants[1].database}, {away, tenants[1].database, tenants[0].database}} {
		if !hasDatabase(t, server.dsn, server.has) || hasDatabase(t, server.dsn, server.hasnt) {
			t.Errorf("server %s: want %s and not %s", serverAddr(t, server.dsn), server.has, server.hasnt)
		}
	}
	if err := c.Provision(ctx, "moved", tenants[1].database, ""); err == nil {
		t.Error("Provision of a tenant on another server than before succeeded")
	}
	if err := c.Provision(ctx, "bad", "imdtest_bad_"+suffix, "not a dsn"); err == nil {
		t.Error("Provision on a DSN that does not parse succeeded")
	}
}

func hasDatabase(t *testing.T, dsn, database string) bool {
	t.Helper()
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var name string
	err = db.QueryRow("SELECT schema_name FROM information_schema.schemata WHERE schema_name = ?", database).Scan(&name)
	if errors.Is(err, sql.ErrNoRows) {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	return true
}

func serverAddr(t *testing.T, dsn string) string {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	return cfg.Addr
}
