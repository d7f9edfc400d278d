package client

import (
	"context"
	"crypto/tls"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/imdhq/imd/clients/go/frame"
	"github.com/imdhq/imd/clients/go/wire"
)

// startWebSocketServer serves the fake server's sessions on GET /ws as PROTOCOL §7 says:
// subprotocol imd.v1, one frame per binary message (a message holding anything else fails
// the test). subprotocols is what the server is willing to select. It returns the ws:// or,
// with serverTLS, the wss:// URL.
func startWebSocketServer(t *testing.T, serverTLS *tls.Config, subprotocols []string, opts ...serverOption) (*fakeServer, string) {
	t.Helper()
	s := &fakeServer{t: t, handle: defaultHandler, sessions: make(chan *session, 16)}
	for _, o := range opts {
		o(s)
	}
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/ws" {
			http.NotFound(w, r)
			return
		}
		ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: subprotocols, OriginPatterns: []string{"chat.example.test"}})
		if err != nil {
			return
		}
		if ws.Subprotocol() != Subprotocol {
			ws.Close(websocket.StatusPolicyViolation, "subprotocol "+Subprotocol+" required")
			return
		}
		s.serveWebSocket(r.Context(), ws)
	}))
	scheme := "ws"
	if serverTLS != nil {
		ts.TLS = serverTLS
		ts.StartTLS()
		scheme = "wss"
	} else {
		ts.Start()
	}
	t.Cleanup(ts.Close)
	return s, scheme + strings.TrimPrefix(ts.URL, strings.Split(ts.URL, ":")[0]) + "/ws"
}

func (s *fakeServer) serveWebSocket(ctx context.Context, ws *websocket.Conn) {
	ss := &session{t: s.t, conn: websocket.NetConn(ctx, ws, websocket.MessageBinary), frames: make(chan frame.Frame, 64), readErr: make(chan error, 1)}
	s.sessions <- ss
	for {
		typ, msg, err := ws.Read(ctx)
		if err != nil {
			ss.readErr <- err
			return
		}
		f, n, err := frame.Decode(msg)
		switch {
		case typ != websocket.MessageBinary:
			s.t.Errorf("client sent a %v message", typ)
		case err != nil:
			s.t.Errorf("message of %d bytes is no frame: %v", len(msg), err)
		case n != len(msg):
			s.t.Errorf("message of %d bytes holds more than its frame of %d", len(msg), n)
		default:
			s.handle(ss, f)
			continue
		}
		ws.Close(websocket.StatusProtocolError, "one frame per binary message")
		ss.readErr <- errors.New("bad message")
		return
	}
}

func TestWebSocket(t *testing.T) {
	serverTLS, clientTLS := testTLS(t)
	for _, tt := range []struct {
		name      string
		serverTLS *tls.Config
		clientTLS *tls.Config
	}{
		{"ws", nil, nil},
		{"wss", serverTLS, clientTLS},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv, url := startWebSocketServer(t, tt.serverTLS, []string{Subprotocol})
			c := dial(t, Options{Addr: url, TLS: tt.clientTLS, PushBuffer: 64, Header: http.Header{"Origin": {"https://chat.example.test"}}})
			ss := srv.nextSession()
			ctx := context.Background()
			if _, err := c.Auth(ctx, goodToken, 3); err != nil {
				t.Fatalf("Auth: %v", err)
			}
			if _, err := c.Send(ctx, wire.SendMessageRequest{Topic: "grp_1", ClientMsgID: "a", Type: wire.TypeText, Content: []byte(`{"text":"hi"}`)}); err != nil {
				t.Fatalf("Send: %v", err)
			}
			// Two frames in one write (as a batch of PUSH_ACKs is) leave as two messages.
			two, _ := frame.Append(nil, wire.CmdHeartbeat, 1, 901, []byte("{}"), 0)
			two, _ = frame.Append(two, wire.CmdHeartbeat, 2, 902, []byte("{}"), 0)
			if err := c.WriteRaw(two); err != nil {
				t.Fatalf("WriteRaw: %v", err)
			}
			for _, seq := range []uint32{901, 902} {
				if p := <-c.Pushes(); p.Command != wire.CmdHeartbeat || p.SequenceID != seq {
					t.Fatalf("answer to a raw heartbeat = %+v, want HEARTBEAT seq %d", p, seq)
				}
			}
			const n = 30
			for i := range n {
				ss.push(wire.CmdMessage, uint32(500+i), testMessage("grp_1", int64(i+1)))
			}
			for i := range n {
				if p := <-c.Pushes(); p.Message == nil || p.Message.Seq != int64(i+1) {
					t.Fatalf("push %d = %+v", i, p)
				}
			}
			for i := range n {
				if f := ss.nextFrame(); f.Command != wire.CmdPushAck || f.SequenceID != uint32(500+i) {
					t.Fatalf("ack %d = cmd %d seq %d", i, f.Command, f.SequenceID)
				}
			}
			if _, _, err := c.SyncMessages(ctx, "grp_1", 0, 0); err != nil {
				t.Fatalf("SyncMessages (compressed pages): %v", err)
			}
		})
	}
}

func TestWebSocketDialErrors(t *testing.T) {
	_, plain := startWebSocketServer(t, nil, nil) // selects no subprotocol
	_, good := startWebSocketServer(t, nil, []string{Subprotocol})
	for _, tt := range []struct {
		name string
		opts Options
		want string
	}{
		{"server selects no subprotocol", Options{Addr: plain}, "subprotocol"},
		{"not the WebSocket path", Options{Addr: strings.TrimSuffix(good, "/ws") + "/other"}, "404"},
		{"PROXY header over WebSocket", Options{Addr: good, ProxyHeader: 1}, "TCP only"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Dial(context.Background(), tt.opts)
			if err == nil {
				c.Close()
				t.Fatal("Dial succeeded")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not mention %q", err, tt.want)
			}
		})
	}
}
