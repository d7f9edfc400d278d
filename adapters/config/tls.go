package config

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
)

// ClientTLS is how imd reaches a backing service (MySQL, Redis) over TLS: the server is
// verified against CAFile (or the system roots) under ServerName (empty: the host imd
// dials, which both drivers fill in);
// CertFile and KeyFile add a client certificate for servers that require one.
type ClientTLS struct {
	Enabled    bool   `yaml:"enabled"`
	CAFile     string `yaml:"ca_file"`
	CertFile   string `yaml:"cert_file"`
	KeyFile    string `yaml:"key_file"`
	ServerName string `yaml:"server_name"`
}

func (t ClientTLS) validate(section string) error {
	if !t.Enabled {
		if t != (ClientTLS{}) {
			return fmt.Errorf("%s.tls: files or server_name set but enabled is false", section)
		}
		return nil
	}
	if (t.CertFile == "") != (t.KeyFile == "") {
		return fmt.Errorf("%s.tls: cert_file and key_file go together", section)
	}
	return nil
}

// Build loads the files into a client configuration; nil when TLS is off.
func (t ClientTLS) Build() (*tls.Config, error) {
	if !t.Enabled {
		return nil, nil
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName}
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("tls: read ca_file: %w", err)
		}
		c.RootCAs = x509.NewCertPool()
		if !c.RootCAs.AppendCertsFromPEM(pem) {
			return nil, errors.New("tls: ca_file " + t.CAFile + " holds no PEM certificate")
		}
	}
	if t.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("tls: client certificate: %w", err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}
