package server

import (
	"crypto/tls"
	"fmt"
)

// LoadTLS reads the PEM certificate chain and key of the `tls: native` mode. The files are
// read once: changing the certificate takes a restart.
func LoadTLS(certFile, keyFile string) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("tcp server: load TLS certificate %s: %w", certFile, err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}
