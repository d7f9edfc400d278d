package server

import (
	"net"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/panjf2000/gnet/v2"

	"github.com/imdhq/imd/adapters/protocol/dispatch"
	"github.com/imdhq/imd/adapters/protocol/session"
	"github.com/imdhq/imd/adapters/tcp/server/tlsconn"
)

// phase is where a connection is in its transport's life (seed 003 §8); once frames flow, its
// session state (authenticated or not) is the dispatch.Client's, and a kicked connection's
// CLOSING lives in session.Conn, which is what the kick reaches.
type phase int32

const (
	phaseProxy     phase = iota // waiting for the PROXY header
	phaseHandshake              // TLS handshake running (tls: native)
	phaseConnected              // frames flow to the dispatcher
	phaseClosed
)

// connection is the state gnet keeps for one client (gnet.Conn.Context).
type connection struct {
	id     uint64
	gc     gnet.Conn
	out    *session.Conn
	client *dispatch.Client
	tls    *tlsconn.Conn // nil in tls: off mode
	peer   netip.Addr    // the TCP peer: Nginx when PROXY is in use
	opened time.Time

	// Event loop only.
	partial []byte // decrypted bytes of an incomplete frame (TLS)

	phase          atomic.Int32
	lastActive     atomic.Int64 // UnixNano of the last traffic, for the idle timeout
	closeRequested atomic.Bool  // a timeout closed it; closed and logged once
}

func (c *connection) load() phase { return phase(c.phase.Load()) }

func (c *connection) store(p phase) { c.phase.Store(int32(p)) }

func (c *connection) advance(from, to phase) bool {
	return c.phase.CompareAndSwap(int32(from), int32(to))
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
