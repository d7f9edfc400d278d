package server

import (
	"context"
	"net"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/panjf2000/gnet/v2"

	"github.com/imdhq/imd/adapters/protocol/session"
	"github.com/imdhq/imd/adapters/ratelimit"
	"github.com/imdhq/imd/adapters/tcp/server/tlsconn"
)

// phase is where a connection is in its life (seed 003 §8). A kicked connection is CLOSING:
// that state lives in session.Conn, which is what the kick reaches.
type phase int32

const (
	phaseProxy          phase = iota // waiting for the PROXY header
	phaseHandshake                   // TLS handshake running (tls: native)
	phaseConnected                   // frames flow; only AUTH and HEARTBEAT are served
	phaseAuthenticating              // an AUTH is in the task pool
	phaseAuthenticated
	phaseClosed
)

// connection is the state gnet keeps for one client (gnet.Conn.Context).
type connection struct {
	id     uint64
	gc     gnet.Conn
	out    *session.Conn
	tls    *tlsconn.Conn // nil in tls: off mode
	peer   netip.Addr    // the TCP peer: Nginx when PROXY is in use
	opened time.Time

	// realIP and limitKey are written on the event loop before phaseHandshake/phaseConnected
	// and read after it.
	realIP   netip.Addr
	limitKey netip.Addr // realIP as the IP rate limits key it

	// Event loop only.
	budgets [budgetCount]ratelimit.Bucket // device rate limits
	partial []byte                        // decrypted bytes of an incomplete frame (TLS)

	phase          atomic.Int32
	lastActive     atomic.Int64 // UnixNano of the last traffic, for the idle timeout
	closeRequested atomic.Bool  // a timeout closed it; closed and logged once

	// ctx is cancelled when the connection closes; every request's context derives from it.
	ctx    context.Context
	cancel context.CancelFunc
}

func (c *connection) load() phase { return phase(c.phase.Load()) }

func (c *connection) store(p phase) { c.phase.Store(int32(p)) }

func (c *connection) advance(from, to phase) bool {
	return c.phase.CompareAndSwap(int32(from), int32(to))
}

// setRealIP records the client's address for logs and rate limits.
func (c *connection) setRealIP(ip netip.Addr) {
	c.realIP, c.limitKey = ip, limitKey(ip)
}

func (c *connection) touch(now time.Time) { c.lastActive.Store(now.UnixNano()) }

func (c *connection) idleFor(now time.Time) time.Duration {
	return now.Sub(time.Unix(0, c.lastActive.Load()))
}

// peerAddr is the IP of the socket's peer; invalid for unix sockets.
func peerAddr(a net.Addr) netip.Addr {
	if tcp, ok := a.(*net.TCPAddr); ok {
		return tcp.AddrPort().Addr().Unmap()
	}
	return netip.Addr{}
}
