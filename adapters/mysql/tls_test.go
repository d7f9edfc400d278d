package mysql

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"testing"
)

// TestTLSConnections: WithTLS makes every pool of the cluster (provisioning, migrations, the
// tenant's queries) speak TLS to the server, verified against the configured roots; roots
// that do not know the server's certificate fail the connection.
func TestTLSConnections(t *testing.T) {
	dsn := testDSN(t)
	dir := os.Getenv("IMD_TEST_TLS_DIR")
	if dir == "" {
		t.Fatal("IMD_TEST_TLS_DIR is unset: run deploy/local/services.sh up and eval its env")
	}
	pem, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		t.Fatal("no CA certificate in " + dir)
	}
	ctx := context.Background()

	c, err := Open(dsn, 0, WithTLS(&tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}))
	if err != nil {
		t.Fatal(err)
	}
	database := "imdtest_tls"
	t.Cleanup(func() {
		c.Close()
		dropDatabase(t, dsn, database)
	})
	if err := c.Provision(ctx, "acme", database, ""); err != nil {
		t.Fatalf("Provision over TLS: %v", err)
	}
	td, err := c.tenant("acme")
	if err != nil {
		t.Fatal(err)
	}
	var name, cipher string
	if err := td.db.QueryRowContext(ctx, "SHOW SESSION STATUS LIKE 'Ssl_cipher'").Scan(&name, &cipher); err != nil {
		t.Fatal(err)
	}
	if cipher == "" {
		t.Fatal("the tenant's connection is not encrypted")
	}

	strange, err := Open(dsn, 0, WithTLS(&tls.Config{RootCAs: x509.NewCertPool(), MinVersion: tls.VersionTLS12}))
	if err != nil {
		t.Fatal(err)
	}
	defer strange.Close()
	if err := strange.Provision(ctx, "acme", database, ""); err == nil {
		t.Fatal("a server certificate no configured root signed was accepted")
	}
}
