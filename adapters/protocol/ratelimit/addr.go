package ratelimit

import "net/netip"

// AddrKey is the address a client's per-IP budgets are kept under: the address itself, IPv4
// unmapped, and for IPv6 its /64, since one host usually owns a whole /64 and could otherwise
// rotate through it. An invalid address (unknown client) stays invalid: callers skip per-IP
// budgets for it.
func AddrKey(ip netip.Addr) netip.Addr {
	if ip.Is6() && !ip.Is4In6() {
		return netip.PrefixFrom(ip, 64).Masked().Addr()
	}
	return ip.Unmap()
}
