package client

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"

	"github.com/coder/websocket"

	"github.com/imdhq/imd/clients/go/frame"
)

// Subprotocol is the WebSocket subprotocol of the frame protocol (PROTOCOL §7).
const Subprotocol = "imd.v1"

func isWebSocketURL(addr string) bool {
	return strings.HasPrefix(addr, "ws://") || strings.HasPrefix(addr, "wss://")
}

// dialWebSocket opens Addr (ws:// or wss://, e.g. wss://api.example.com/ws)
// offering the imd.v1 subprotocol. The server must select it: a server that
// does not speak the frame protocol is refused here, not at the first frame.
func dialWebSocket(ctx context.Context, o Options) (*Conn, error) {
	if o.ProxyHeader != 0 || o.LocalAddr != "" {
		return nil, fmt.Errorf("client: dial %s: ProxyHeader and LocalAddr apply to TCP only", o.Addr)
	}
	ctx, cancel := context.WithTimeout(ctx, o.DialTimeout)
	defer cancel()
	opts := &websocket.DialOptions{Subprotocols: []string{Subprotocol}, HTTPHeader: o.Header}
	if o.TLS != nil {
		opts.HTTPClient = &http.Client{Transport: &http.Transport{TLSClientConfig: o.TLS.Clone(), Proxy: http.ProxyFromEnvironment}}
	}
	ws, resp, err := websocket.Dial(ctx, o.Addr, opts)
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	if err != nil {
		return nil, fmt.Errorf("client: dial %s: %w", o.Addr, err)
	}
	if got := ws.Subprotocol(); got != Subprotocol {
		ws.Close(websocket.StatusProtocolError, "subprotocol "+Subprotocol+" required")
		return nil, fmt.Errorf("client: dial %s: server selected subprotocol %q, want %q", o.Addr, got, Subprotocol)
	}
	// The connection outlives the dial: its context is the background one, and
	// Close ends it.
	nc := websocket.NetConn(context.Background(), ws, websocket.MessageBinary)
	ws.SetReadLimit(frame.HeaderLen + frame.MaxBody)
	return newConn(messageConn{nc}, o), nil
}

// messageConn puts every frame of a Write into a binary message of its own:
// PROTOCOL §7 allows exactly one frame per message, and the Conn writes
// batches of PUSH_ACK frames at once.
type messageConn struct{ net.Conn }

func (m messageConn) Write(b []byte) (int, error) {
	written := 0
	for len(b) > 0 {
		n := len(b)
		if h, err := frame.ParseHeader(b); err == nil && frame.HeaderLen+int(h.BodyLen) < n {
			n = frame.HeaderLen + int(h.BodyLen)
		}
		// Bytes that are no whole frame (WriteRaw in tests) go out as they are.
		if _, err := m.Conn.Write(b[:n]); err != nil {
			return written, err
		}
		written += n
		b = b[n:]
	}
	return written, nil
}
