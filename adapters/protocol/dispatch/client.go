package dispatch

import (
	"context"
	"net/netip"
	"sync/atomic"

	"github.com/imdhq/imd/adapters/protocol/ratelimit"
	"github.com/imdhq/imd/adapters/protocol/session"
)

// state is where a client is in its session (seed 003 §8). The transport's own phases (PROXY
// header, TLS handshake, WebSocket upgrade) come before a Client exists or before it reads
// frames; a kicked client is CLOSING, which lives in session.Conn, the part a kick reaches.
type state int32

const (
	stateConnected      state = iota // frames flow; only AUTH and HEARTBEAT are served
	stateAuthenticating              // an AUTH is in the task pool
	stateAuthenticated
	stateClosed
)

// Client is one frame connection as the commands see it, whatever its transport. Frames of
// one Client are handed to Dispatch by one goroutine at a time (its event loop or reader).
type Client struct {
	id        uint64
	transport string // "tcp" or "ws", in logs
	out       *session.Conn

	// realIP and limitKey are set before the first frame is dispatched.
	realIP   netip.Addr
	limitKey netip.Addr // realIP as the IP rate limits key it

	// The dispatching goroutine only.
	budgets [budgetCount]ratelimit.Bucket // device rate limits

	state atomic.Int32

	// ctx is cancelled when the client closes; every request's context derives from it.
	ctx    context.Context
	cancel context.CancelFunc
}

// NewClient starts the session side of a connection whose frames are written through out.
// transport names it in logs. Call Close when the connection closes.
func (d *Dispatcher) NewClient(transport string, out *session.Conn) *Client {
	c := &Client{id: out.ID(), transport: transport, out: out}
	c.ctx, c.cancel = context.WithCancel(d.base)
	return c
}

// SetRealIP records the client's address for logs and rate limits; call it before the first
// frame is dispatched.
func (c *Client) SetRealIP(ip netip.Addr) {
	c.realIP, c.limitKey = ip, limitKey(ip)
}

// RealIP is the client's address as the transport learned it.
func (c *Client) RealIP() netip.Addr { return c.realIP }

// Context ends when the client closes.
func (c *Client) Context() context.Context { return c.ctx }

// Out is the client's write side.
func (c *Client) Out() *session.Conn { return c.out }

// Authenticated reports whether AUTH succeeded on this client.
func (c *Client) Authenticated() bool { return c.load() == stateAuthenticated }

// Close ends the client's session once its connection closed: requests in flight are
// cancelled, its device is unbound and the pushes it never acknowledged are given up.
func (d *Dispatcher) Close(c *Client) {
	c.store(stateClosed)
	c.cancel()
	d.sessions.Unbind(c.out)
}

func (c *Client) load() state { return state(c.state.Load()) }

func (c *Client) store(s state) { c.state.Store(int32(s)) }

func (c *Client) advance(from, to state) bool {
	return c.state.CompareAndSwap(int32(from), int32(to))
}
