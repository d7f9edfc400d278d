package mysql

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"os"
	"testing"

	"github.com/go-sql-driver/mysql"
)

// testDSN returns the server DSN of the test MariaDB/MySQL. Without one the test is skipped,
// unless IMD_REQUIRE_SERVICES=1 says the services must be there.
func testDSN(tb testing.TB) string { return envDSN(tb, "IMD_TEST_MYSQL_DSN") }

// envDSN is the server DSN in the variable: IMD_TEST_MYSQL_DSN, or IMD_TEST_MYSQL2_DSN for the
// second server services.sh starts.
func envDSN(tb testing.TB, name string) string {
	tb.Helper()
	dsn := os.Getenv(name)
	if dsn == "" {
		if os.Getenv("IMD_REQUIRE_SERVICES") == "1" {
			tb.Fatalf("%s is unset and IMD_REQUIRE_SERVICES=1", name)
		}
		tb.Skipf("%s is unset", name)
	}
	return dsn
}

// newTestCluster provisions a throwaway tenant database, dropped when the test ends.
func newTestCluster(tb testing.TB) (*Cluster, string) {
	tb.Helper()
	dsn := testDSN(tb)
	c, err := Open(dsn, 0)
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	var raw [6]byte
	if _, err := rand.Read(raw[:]); err != nil {
		tb.Fatal(err)
	}
	database := "imdtest_" + hex.EncodeToString(raw[:])
	const tenant = "acme"
	tb.Cleanup(func() {
		c.Close()
		dropDatabase(tb, dsn, database)
	})
	if err := c.Provision(context.Background(), tenant, database, ""); err != nil {
		tb.Fatalf("Provision: %v", err)
	}
	return c, tenant
}

func dropDatabase(tb testing.TB, dsn, database string) {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		tb.Errorf("parse dsn: %v", err)
		return
	}
	cfg.DBName = ""
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		tb.Errorf("open server: %v", err)
		return
	}
	defer db.Close()
	if _, err := db.Exec("DROP DATABASE IF EXISTS `" + database + "`"); err != nil {
		tb.Errorf("drop %s: %v", database, err)
	}
}

// rawDB returns the pool of the test tenant, for setting up rows no port writes.
func rawDB(tb testing.TB, c *Cluster, tenant string) *sql.DB {
	tb.Helper()
	t, err := c.tenant(tenant)
	if err != nil {
		tb.Fatal(err)
	}
	return t.db
}
