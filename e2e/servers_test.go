package e2e

// Tenants on several MySQL servers (issue 14 item 6): one imd serving a tenant on each of the
// two MariaDB servers services.sh starts, and a tenant provisioned on the second server that a
// node started later finds there through the tenant registry.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// RequireSecondMySQL returns the DSN of the second MariaDB server, skipping the test when it is
// absent unless IMD_REQUIRE_SERVICES=1.
func RequireSecondMySQL(t testing.TB) string {
	t.Helper()
	RequireServices(t)
	dsn := os.Getenv("IMD_TEST_MYSQL2_DSN")
	if dsn == "" {
		if os.Getenv("IMD_REQUIRE_SERVICES") == "1" {
			t.Fatal("IMD_TEST_MYSQL2_DSN is required")
		}
		t.Skip("no second MySQL server configured; run `go tool task test`")
	}
	return dsn
}

// AsTenant is the same process seen as another of its tenants: the admin helpers (User, Group,
// Admin…) then act on that tenant.
func (s *Server) AsTenant(name string) *Server {
	v := *s
	v.Tenant = name
	return &v
}

func TestTenantsOnTwoMySQLServersAtOnce(t *testing.T) {
	home := RequireServices(t).MySQLDSN
	away := RequireSecondMySQL(t)
	near, far, late := "e2e_"+randomHex(6), "e2e_"+randomHex(6), "e2e_"+randomHex(6)
	t.Cleanup(func() {
		dropDatabase(home, "imd_"+near)
		dropDatabase(away, "imd_"+far)
		dropDatabase(away, "imd_"+late)
	})
	env := withRegistry(t, map[string]string{"IMD_TENANTS": near + ":imd_" + near + "," + far + ":imd_" + far + ":" + away})
	first := Start(t, Options{Tenant: near, Env: env})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// Both tenants send at the same time; each one's messages land on its own server only.
	placed := []struct {
		srv        *Server
		dsn, other string
	}{{first, home, away}, {first.AsTenant(far), away, home}}
	topics := make([]string, len(placed))
	var sends sync.WaitGroup
	for i, p := range placed {
		tok := p.srv.User(1)
		p.srv.User(2)
		topics[i] = p.srv.Group(1402, 1, 2)
		c := p.srv.Connect(ctx, tok, 1)
		sends.Go(func() {
			for n := range 10 {
				id := fmt.Sprintf("two-servers-%d", n)
				if _, err := c.Send(ctx, textMessage(topics[i], id, id)); err != nil {
					t.Errorf("tenant %s: send %s: %v", p.srv.Tenant, id, err)
					return
				}
			}
		})
	}
	sends.Wait()
	for i, p := range placed {
		database := "imd_" + p.srv.Tenant
		if got := p.srv.SeqsInTable(databaseOn(t, p.dsn, database), Month(0), topics[i]); !slices.Equal(got, seqRange(1, 10)) {
			t.Errorf("tenant %s on %s holds seqs %v", p.srv.Tenant, serverOf(t, p.dsn), got)
		}
		if hasDatabase(t, p.other, database) {
			t.Errorf("database %s exists on %s too", database, serverOf(t, p.other))
		}
	}

	// Provisioned through the admin API on the second server; the answer never shows the
	// password.
	var created struct {
		Tenant, Database, DSN string
	}
	status, e := call(t, first, first.AdminKey, "POST", "/admin/v1/tenants", map[string]string{"tenant": late, "dsn": away}, &created)
	if status != 201 || created.Database != "imd_"+late || !strings.Contains(created.DSN, ":********@tcp("+serverOf(t, away)+")") {
		t.Fatalf("provision on the second server: HTTP %d %+v %+v", status, created, e)
	}
	// A node started later learns from the registry where the tenant lives, and writes there.
	secondEnv := map[string]string{"IMD_NODE_ID": "2"}
	for k, v := range env {
		secondEnv[k] = v
	}
	second := Start(t, Options{Tenant: near, Env: secondEnv}).AsTenant(late)
	tok := second.User(1)
	second.User(2)
	topic := second.Group(1403, 1, 2)
	sendN(t, ctx, second.Connect(ctx, tok, 1), topic, "late", 5)
	if got := second.SeqsInTable(databaseOn(t, away, "imd_"+late), Month(0), topic); !slices.Equal(got, seqRange(1, 5)) {
		t.Errorf("the provisioned tenant holds seqs %v on the second server", got)
	}
	if hasDatabase(t, home, "imd_"+late) {
		t.Errorf("the provisioned tenant's database exists on the default server too")
	}
}

// databaseOn opens one database of the server dsn names, closed when the test ends.
func databaseOn(t *testing.T, dsn, database string) *sql.DB {
	t.Helper()
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.DBName = database
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func hasDatabase(t *testing.T, dsn, database string) bool {
	t.Helper()
	var name string
	err := databaseOn(t, dsn, "").QueryRow("SELECT schema_name FROM information_schema.schemata WHERE schema_name = ?", database).Scan(&name)
	if errors.Is(err, sql.ErrNoRows) {
		return false
	}
	if err != nil {
		t.Fatal(fmt.Errorf("look for database %s: %w", database, err))
	}
	return true
}

func serverOf(t *testing.T, dsn string) string {
	t.Helper()
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	return cfg.Addr
}
