package client

import (
	"crypto/tls"
	"net/http"
	"net/netip"
	"time"
)

// Defaults for zero Options fields.
const (
	DefaultDialTimeout    = 5 * time.Second
	DefaultRequestTimeout = 10 * time.Second
	DefaultPushBuffer     = 1024
)

// Options configure Dial.
type Options struct {
	// Addr is host:port, "unix:/path", or a WebSocket URL (ws://host/ws,
	// wss://api.example.com/ws).
	Addr string
	TLS  *tls.Config // nil = plaintext frames (TCP) or the system roots (wss://); an empty ServerName is taken from Addr's host
	// Header is sent with the WebSocket handshake (Origin, User-Agent, …).
	Header http.Header
	// ProxyHeader (TCP only) makes the client write a PROXY header first, as Nginx does:
	// 0 none, 1 = v1, 2 = v2. The source is ProxySource when valid, else the
	// socket's local address.
	ProxyHeader int
	ProxySource netip.AddrPort
	// LocalAddr binds the TCP socket to this local IP (e.g. 127.0.0.2), so a
	// load test can come from many source addresses.
	LocalAddr   string
	CompressMin int // compress request bodies of at least this many bytes (0 = never)
	// DialTimeout bounds connect, PROXY header and TLS handshake; RequestTimeout
	// bounds each request on top of its context. Zero means the default.
	DialTimeout, RequestTimeout time.Duration
	PushBuffer                  int // capacity of the Pushes channel (0 = DefaultPushBuffer)
}

func (o Options) withDefaults() Options {
	if o.DialTimeout <= 0 {
		o.DialTimeout = DefaultDialTimeout
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = DefaultRequestTimeout
	}
	if o.PushBuffer <= 0 {
		o.PushBuffer = DefaultPushBuffer
	}
	return o
}
