package client

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"time"

	"github.com/imdhq/imd/clients/go/proxyheader"
)

const unixPrefix = "unix:"

// Dial connects, writes the PROXY header if asked, then does the TLS handshake
// if asked (the header travels in plaintext before TLS, as from Nginx), and
// starts the reader goroutine. An Addr of ws:// or wss:// dials the WebSocket
// transport instead (see DialWebSocket). ctx bounds the dial only, not the
// connection.
func Dial(ctx context.Context, o Options) (*Conn, error) {
	o = o.withDefaults()
	if isWebSocketURL(o.Addr) {
		return dialWebSocket(ctx, o)
	}
	if o.ProxyHeader < 0 || o.ProxyHeader > 2 {
		return nil, fmt.Errorf("client: ProxyHeader %d: want 0, 1 or 2", o.ProxyHeader)
	}
	ctx, cancel := context.WithTimeout(ctx, o.DialTimeout)
	defer cancel()

	nc, err := dialSocket(ctx, o)
	if err != nil {
		return nil, fmt.Errorf("client: dial %s: %w", o.Addr, err)
	}
	if nc, err = prepare(ctx, nc, o); err != nil {
		return nil, fmt.Errorf("client: dial %s: %w", o.Addr, err)
	}
	return newConn(nc, o), nil
}

func dialSocket(ctx context.Context, o Options) (net.Conn, error) {
	var d net.Dialer
	if path, ok := strings.CutPrefix(o.Addr, unixPrefix); ok {
		if o.LocalAddr != "" {
			return nil, errors.New("LocalAddr needs a TCP address")
		}
		return d.DialContext(ctx, "unix", path)
	}
	if o.LocalAddr != "" {
		ip, err := netip.ParseAddr(o.LocalAddr)
		if err != nil {
			return nil, fmt.Errorf("LocalAddr: %w", err)
		}
		d.LocalAddr = net.TCPAddrFromAddrPort(netip.AddrPortFrom(ip, 0))
	}
	return d.DialContext(ctx, "tcp", o.Addr)
}

// prepare writes the PROXY header and runs the TLS handshake. It closes nc on
// failure.
func prepare(ctx context.Context, nc net.Conn, o Options) (net.Conn, error) {
	fail := func(err error) (net.Conn, error) {
		nc.Close()
		return nil, err
	}
	deadline, _ := ctx.Deadline()
	if err := nc.SetDeadline(deadline); err != nil {
		return fail(err)
	}
	if o.ProxyHeader != 0 {
		if _, err := nc.Write(proxyHeader(nc, o)); err != nil {
			return fail(fmt.Errorf("write PROXY header: %w", err))
		}
	}
	if o.TLS != nil {
		tc := tls.Client(nc, tlsConfig(o))
		if err := tc.HandshakeContext(ctx); err != nil {
			return fail(fmt.Errorf("TLS handshake: %w", err))
		}
		nc = tc
	}
	if err := nc.SetDeadline(time.Time{}); err != nil {
		return fail(err)
	}
	return nc, nil
}

// proxyHeader is the header Nginx would send for nc. A source and destination
// of different families are written as IPv6 (v4-mapped), an unknown source as
// UNKNOWN (v1) or LOCAL (v2).
func proxyHeader(nc net.Conn, o Options) []byte {
	src := o.ProxySource
	if !src.IsValid() {
		src = tcpAddrPort(nc.LocalAddr())
	}
	dst := tcpAddrPort(nc.RemoteAddr())
	if !dst.IsValid() && src.IsValid() {
		// A unix socket has no TCP destination; Nginx would name its own
		// listener, so name a loopback :443 of the source's family.
		dst = netip.AddrPortFrom(netip.IPv6Loopback(), 443)
		if src.Addr().Unmap().Is4() {
			dst = netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), 443)
		}
	}
	if o.ProxyHeader == 1 {
		return proxyheader.AppendV1(nil, src, dst)
	}
	return proxyheader.AppendV2(nil, src, dst)
}

func tcpAddrPort(a net.Addr) netip.AddrPort {
	if ta, ok := a.(*net.TCPAddr); ok {
		return ta.AddrPort()
	}
	return netip.AddrPort{}
}

func tlsConfig(o Options) *tls.Config {
	cfg := o.TLS
	if cfg.ServerName != "" || strings.HasPrefix(o.Addr, unixPrefix) {
		return cfg
	}
	host, _, err := net.SplitHostPort(o.Addr)
	if err != nil {
		return cfg
	}
	cfg = cfg.Clone()
	cfg.ServerName = host
	return cfg
}
