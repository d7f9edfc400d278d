package config

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// writeCA writes a self-signed CA certificate and its key as PEM files.
func writeCA(t *testing.T) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"}, IsCA: true,
		BasicConstraintsValid: true, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "ca.crt"), filepath.Join(dir, "ca.key")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

func TestClientTLSBuild(t *testing.T) {
	ca, key := writeCA(t)
	if c, err := (ClientTLS{}).Build(); c != nil || err != nil {
		t.Fatalf("TLS off: %v, %v; want nil, nil", c, err)
	}
	c, err := ClientTLS{Enabled: true, CAFile: ca, CertFile: ca, KeyFile: key, ServerName: "db.internal"}.Build()
	if err != nil {
		t.Fatal(err)
	}
	if c.RootCAs == nil || len(c.Certificates) != 1 || c.ServerName != "db.internal" {
		t.Fatalf("built %+v", c)
	}
	if c, err := (ClientTLS{Enabled: true}).Build(); err != nil || c.RootCAs != nil {
		t.Fatalf("system roots: %v, %v", c, err)
	}
	for name, bad := range map[string]ClientTLS{
		"missing ca":  {Enabled: true, CAFile: filepath.Join(t.TempDir(), "none.crt")},
		"ca not pem":  {Enabled: true, CAFile: key},
		"bad keypair": {Enabled: true, CertFile: ca, KeyFile: ca},
	} {
		if _, err := bad.Build(); err == nil {
			t.Errorf("%s: built", name)
		}
	}
}

func TestClientTLSWithAuthLoads(t *testing.T) {
	if _, err := Load(writeConfig(t, validYAML), []string{"IMD_REDIS_TLS_ENABLED=true", "IMD_REDIS_TLS_CA_FILE=/ca.crt", "IMD_REDIS_USERNAME=imd", "IMD_REDIS_PASSWORD=pw"}); err != nil {
		t.Fatalf("redis tls and auth: %v", err)
	}
}
