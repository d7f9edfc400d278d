package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	cws "github.com/coder/websocket"

	"github.com/imdhq/imd/clients/go/frame"
	"github.com/imdhq/imd/clients/go/wire"
)

// WSConn is the e2e tests' raw WebSocket client (PROTOCOL §7): one frame per binary message,
// requests answered in order, MESSAGE pushes acknowledged. It can do what a well-behaved
// client never does (text messages, a foreign Origin, an HTTP client that resolves the
// Nginx name to loopback); the Go client's own WebSocket dialer is tested end to end in
// client_ws_test.go.
type WSConn struct {
	WS   *cws.Conn
	seq  uint32
	read chan wsFrame
	// Pushes are the server's frames that answer no request, in order.
	Pushes []frame.Frame
}

type wsFrame struct {
	f   frame.Frame
	err error
}

// DialWS opens a WebSocket to url (ws:// or wss://) through hc, offering imd.v1 and sending
// origin when set.
func DialWS(ctx context.Context, url string, hc *http.Client, origin string) (*WSConn, *http.Response, error) {
	h := http.Header{}
	if origin != "" {
		h.Set("Origin", origin)
	}
	ws, resp, err := cws.Dial(ctx, url, &cws.DialOptions{HTTPClient: hc, HTTPHeader: h, Subprotocols: []string{"imd.v1"}})
	if err != nil {
		return nil, resp, err
	}
	ws.SetReadLimit(frame.HeaderLen + frame.MaxBody)
	c := &WSConn{WS: ws, read: make(chan wsFrame, 64)}
	go c.readLoop()
	return c, resp, nil
}

func (c *WSConn) readLoop() {
	defer close(c.read)
	for {
		typ, data, err := c.WS.Read(context.Background())
		if err != nil {
			c.read <- wsFrame{err: err}
			return
		}
		f, n, err := frame.Decode(data)
		if err == nil && (typ != cws.MessageBinary || n != len(data)) {
			err = fmt.Errorf("server message of type %v is not one frame", typ)
		}
		if err == nil && f.Command == wire.CmdMessage {
			ack, _ := frame.Append(nil, wire.CmdPushAck, 0, f.SequenceID, []byte(`{}`), 0)
			_ = c.WS.Write(context.Background(), cws.MessageBinary, ack)
		}
		c.read <- wsFrame{f: f, err: err}
		if err != nil {
			return
		}
	}
}

// Call sends one request and returns its final response's envelope; pushes that arrive
// meanwhile are kept in Pushes, stream pages are skipped.
func (c *WSConn) Call(ctx context.Context, cmd uint16, body any) (wire.Envelope, error) {
	c.seq++
	b, err := json.Marshal(body)
	if err != nil {
		return wire.Envelope{}, err
	}
	f, err := frame.Append(nil, cmd, uint64(c.seq), c.seq, b, 0)
	if err != nil {
		return wire.Envelope{}, err
	}
	if err := c.WS.Write(ctx, cws.MessageBinary, f); err != nil {
		return wire.Envelope{}, err
	}
	final := wire.ResponseCommand(cmd)
	for {
		in, err := c.Next(ctx)
		if err != nil {
			return wire.Envelope{}, err
		}
		if in.RequestID != uint64(c.seq) || in.SequenceID != c.seq {
			c.Pushes = append(c.Pushes, in)
			continue
		}
		if in.Command != final {
			continue // a page of SYNC_*
		}
		var env wire.Envelope
		err = json.Unmarshal(in.Body, &env)
		return env, err
	}
}

// Next returns the next frame the server sent.
func (c *WSConn) Next(ctx context.Context) (frame.Frame, error) {
	select {
	case in, ok := <-c.read:
		if !ok {
			return frame.Frame{}, fmt.Errorf("websocket closed")
		}
		return in.f, in.err
	case <-ctx.Done():
		return frame.Frame{}, ctx.Err()
	}
}

// Close closes the connection at once.
func (c *WSConn) Close() { _ = c.WS.CloseNow() }
