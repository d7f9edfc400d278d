package config

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
)

// Listener checks a listener address of section (http or tcp): a unix socket or a loopback
// host:port, unless public is set. Seed 003 §20.9: only Nginx's 443 faces the network; imd's
// listeners sit behind it on loopback, so a 0.0.0.0 or a LAN address from a copied config or a
// stray IMD_*_ADDR must not expose the frame or admin port by accident. A deployment that
// binds them elsewhere on purpose (a container whose proxy is in another network namespace)
// says so with <section>.public: true.
func Listener(section, addr string, public bool) error {
	if strings.HasPrefix(addr, "unix:") {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%s.addr %q: %w", section, addr, err)
	}
	if public || host == "localhost" {
		return nil
	}
	if ip, err := netip.ParseAddr(host); err == nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("%s.addr %q is not a loopback address: imd listens behind Nginx on loopback (seed 003 §20.9); set %s.public: true (IMD_%s_PUBLIC=true) to bind it on purpose",
		section, addr, section, strings.ToUpper(section))
}
