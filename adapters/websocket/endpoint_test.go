package websocket

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	cws "github.com/coder/websocket"

	"github.com/imdhq/imd/adapters/memory"
	"github.com/imdhq/imd/adapters/protocol/dispatch"
	"github.com/imdhq/imd/adapters/protocol/ratelimit"
	"github.com/imdhq/imd/adapters/protocol/session"
	"github.com/imdhq/imd/clients/go/frame"
	"github.com/imdhq/imd/clients/go/wire"
	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/auth"
	"github.com/imdhq/imd/core/domain/delivery"
	"github.com/imdhq/imd/core/domain/message"
)

// tokens accepts "tok-<user>" for tenant "t".
type tokens struct{}

func (tokens) Authenticate(_ context.Context, token string) (auth.Identity, error) {
	user, err := strconv.ParseInt(strings.TrimPrefix(token, "tok-"), 10, 64)
	if err != nil || !strings.HasPrefix(token, "tok-") {
		return auth.Identity{}, apperr.New(apperr.Unauthenticated, "bad token")
	}
	return auth.Identity{Tenant: "t", UserID: user}, nil
}

type harness struct {
	srv      *httptest.Server
	ep       *Endpoint
	commands *dispatch.Dispatcher
	metrics  *memory.Metrics
	url      string
}

func start(t *testing.T, cfg Config) *harness {
	t.Helper()
	// Uncompressed, so that the slow client test fills buffers with what it pushes.
	return startWith(t, cfg, dispatch.Config{CompressMin: -1})
}

func startWith(t *testing.T, cfg Config, dcfg dispatch.Config) *harness {
	t.Helper()
	log := slog.New(slog.DiscardHandler)
	m := memory.NewMetrics()
	d := dispatch.New(dcfg, dispatch.Deps{
		Auth: tokens{}, Clock: memory.NewClock(time.UnixMilli(1_700_000_000_000)), Metrics: m,
	}, log)
	d.Start(t.Context())
	ep := New(cfg, d, m, log)
	srv := httptest.NewServer(ep)
	t.Cleanup(func() {
		_ = ep.Stop(context.Background())
		srv.Close()
		_ = d.Stop(context.Background())
	})
	return &harness{srv: srv, ep: ep, commands: d, metrics: m, url: "ws" + strings.TrimPrefix(srv.URL, "http")}
}

// client is a test browser: one frame per binary message.
type client struct {
	t  *testing.T
	ws *cws.Conn
}

func (h *harness) dial(t *testing.T) *client {
	t.Helper()
	return h.dialWith(t, &cws.DialOptions{Subprotocols: []string{Subprotocol}})
}

// dialSlow dials with a tiny socket receive buffer, so a client that reads nothing fills the
// server's side soon.
func (h *harness) dialSlow(t *testing.T) *client {
	t.Helper()
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		nc, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err == nil {
			_ = nc.(*net.TCPConn).SetReadBuffer(4096)
		}
		return nc, err
	}}
	t.Cleanup(tr.CloseIdleConnections)
	return h.dialWith(t, &cws.DialOptions{Subprotocols: []string{Subprotocol}, HTTPClient: &http.Client{Transport: tr}})
}

func (h *harness) dialWith(t *testing.T, opts *cws.DialOptions) *client {
	t.Helper()
	ws, _, err := cws.Dial(t.Context(), h.url, opts)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	ws.SetReadLimit(1 << 20)
	t.Cleanup(func() { _ = ws.CloseNow() })
	return &client{t: t, ws: ws}
}

func (c *client) send(cmd uint16, seq uint32, body any) {
	c.t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		c.t.Fatal(err)
	}
	f, err := frame.Append(nil, cmd, uint64(seq), seq, b, 0)
	if err != nil {
		c.t.Fatal(err)
	}
	c.raw(cws.MessageBinary, f)
}

func (c *client) raw(typ cws.MessageType, b []byte) {
	c.t.Helper()
	if err := c.ws.Write(c.t.Context(), typ, b); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// read returns the next frame and its envelope.
func (c *client) read() (frame.Frame, wire.Envelope) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(c.t.Context(), 10*time.Second)
	defer cancel()
	typ, data, err := c.ws.Read(ctx)
	if err != nil {
		c.t.Fatalf("read: %v", err)
	}
	if typ != cws.MessageBinary {
		c.t.Fatalf("server sent a %v message", typ)
	}
	f, n, err := frame.Decode(data)
	if err != nil || n != len(data) {
		c.t.Fatalf("server message is not one frame: %v (%d of %d bytes)", err, n, len(data))
	}
	var env wire.Envelope
	if err := json.Unmarshal(f.Body, &env); err != nil {
		c.t.Fatalf("envelope %s: %v", f.Body, err)
	}
	return f, env
}

func (c *client) call(cmd uint16, seq uint32, body any) (frame.Frame, wire.Envelope) {
	c.t.Helper()
	c.send(cmd, seq, body)
	return c.read()
}

func (c *client) auth(user int64, device uint64) {
	c.t.Helper()
	if _, env := c.call(wire.CmdAuth, 1, wire.AuthRequest{Token: "tok-" + strconv.FormatInt(user, 10), DeviceID: device}); env.Code != 0 {
		c.t.Fatalf("auth: %d %s", env.Code, env.Msg)
	}
}

// closed waits for the server to close and returns its close code.
func (c *client) closed() cws.StatusCode {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(c.t.Context(), 10*time.Second)
	defer cancel()
	for {
		_, _, err := c.ws.Read(ctx)
		if err != nil {
			return cws.CloseStatus(err)
		}
	}
}

func TestCommandsOverWebSocket(t *testing.T) {
	h := start(t, Config{})
	c := h.dial(t)
	if _, env := c.call(wire.CmdHeartbeat, 7, struct{}{}); env.Code != 0 || env.RequestID != "7" {
		t.Fatalf("heartbeat before AUTH: %+v", env)
	}
	if f, env := c.call(wire.CmdGetHistory, 8, struct{}{}); env.Code != wire.CodeUnauthenticated || f.Command != wire.CmdGetHistory {
		t.Fatalf("command before AUTH: command %d code %d", f.Command, env.Code)
	}
	if _, env := c.call(wire.CmdAuth, 9, wire.AuthRequest{Token: "nope", DeviceID: 1}); env.Code != wire.CodeUnauthenticated {
		t.Fatalf("bad token: code %d", env.Code)
	}
	c.auth(5, 1)
	var data wire.AuthResponse
	_, env := c.call(wire.CmdHeartbeat, 10, struct{}{})
	if env.Code != 0 || json.Unmarshal(env.Data, &data) != nil {
		t.Fatalf("heartbeat after AUTH: %+v", env)
	}
}

// Pushes reach every device of the user but the sender's, with their own sequence ids, and
// a push may be acknowledged.
func TestPushAndKickAcrossSessions(t *testing.T) {
	h := start(t, Config{})
	phone, desk := h.dial(t), h.dial(t)
	phone.auth(5, 1)
	desk.auth(5, 2)
	msg := &message.Message{Topic: "grp_1", Seq: 3, MsgID: 33, Type: "text", Content: json.RawMessage(`{"text":"hi"}`)}
	rep := h.commands.Sessions().Push(t.Context(), "t", delivery.Target{Recipients: []int64{5}, Sender: 5, ExcludeDevice: 1},
		delivery.Push{Kind: delivery.KindMessage, Message: msg})
	if rep.Delivered != 1 {
		t.Fatalf("push report %+v, want the desk only", rep)
	}
	f, env := desk.read()
	var got wire.Message
	if f.Command != wire.CmdMessage || json.Unmarshal(env.Data, &got) != nil || got.Seq != 3 {
		t.Fatalf("push: command %d data %s", f.Command, env.Data)
	}
	desk.send(wire.CmdPushAck, f.SequenceID, struct{}{})

	// The same device again replaces the older connection: KICK, then the close.
	again := h.dial(t)
	again.auth(5, 2)
	f, env = desk.read()
	if f.Command != wire.CmdKick || string(env.Data) != `{"reason":"replaced"}` {
		t.Fatalf("replaced connection got command %d %s", f.Command, env.Data)
	}
	if code := desk.closed(); code != cws.StatusNormalClosure {
		t.Fatalf("close after KICK: %v", code)
	}
	if _, env := phone.call(wire.CmdHeartbeat, 2, struct{}{}); env.Code != 0 {
		t.Fatal("the user's other device was affected")
	}
}

// Every bad message closes its own connection with PROTOCOL §7's code and no other.
func TestBadMessagesCloseTheirConnection(t *testing.T) {
	valid, _ := frame.Append(nil, wire.CmdHeartbeat, 1, 1, []byte(`{}`), 0)
	oversize := append([]byte(nil), valid[:frame.HeaderLen]...)
	oversize[frame.HeaderLen-4], oversize[frame.HeaderLen-3] = 0x00, 0x02 // body_length 131072
	tests := []struct {
		name string
		typ  cws.MessageType
		msg  []byte
		want cws.StatusCode
	}{
		{"text message", cws.MessageText, []byte(`{"hello":1}`), cws.StatusUnsupportedData},
		{"bad magic", cws.MessageBinary, append([]byte{0, 0}, valid[2:]...), cws.StatusProtocolError},
		{"part of a frame", cws.MessageBinary, valid[:frame.HeaderLen+1], cws.StatusProtocolError},
		{"two frames", cws.MessageBinary, append(append([]byte(nil), valid...), valid...), cws.StatusProtocolError},
		{"body over the limit", cws.MessageBinary, oversize, cws.StatusMessageTooBig},
		{"message over the limit", cws.MessageBinary, make([]byte, readLimit+1), cws.StatusMessageTooBig},
	}
	h := start(t, Config{})
	bystander := h.dial(t)
	bystander.auth(9, 1)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := h.dial(t)
			c.raw(tt.typ, tt.msg)
			if code := c.closed(); code != tt.want {
				t.Fatalf("close code %v, want %v", code, tt.want)
			}
			if _, env := bystander.call(wire.CmdHeartbeat, 3, struct{}{}); env.Code != 0 {
				t.Fatal("another connection was affected")
			}
		})
	}
}

func TestUpgradeRefusals(t *testing.T) {
	h := start(t, Config{AllowedOrigins: []string{"chat.example.com"}})
	tests := []struct {
		name   string
		opts   *cws.DialOptions
		status int
	}{
		{"no subprotocol", &cws.DialOptions{}, http.StatusBadRequest},
		{"other subprotocol", &cws.DialOptions{Subprotocols: []string{"mqtt"}}, http.StatusBadRequest},
		{"origin outside the allow-list", &cws.DialOptions{Subprotocols: []string{Subprotocol},
			HTTPHeader: http.Header{"Origin": {"https://evil.example.net"}}}, http.StatusForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, resp, err := cws.Dial(t.Context(), h.url, tt.opts)
			if err == nil {
				t.Fatal("upgraded")
			}
			if resp == nil || resp.StatusCode != tt.status {
				t.Fatalf("response %v, want status %d", resp, tt.status)
			}
		})
	}
	for _, origin := range []string{"https://chat.example.com", h.srv.URL} {
		ws, _, err := cws.Dial(t.Context(), h.url, &cws.DialOptions{Subprotocols: []string{Subprotocol},
			HTTPHeader: http.Header{"Origin": {origin}}})
		if err != nil {
			t.Fatalf("origin %s refused: %v", origin, err)
		}
		_ = ws.CloseNow()
	}
}

// A browser that stops reading loses pushes beyond its outbound limits and is closed once a
// write cannot finish; the server's other clients carry on.
func TestSlowBrowser(t *testing.T) {
	h := start(t, Config{WriteTimeout: 200 * time.Millisecond, OutboundFrames: 8})
	slow, other := h.dialSlow(t), h.dial(t)
	slow.auth(1, 1)
	other.auth(2, 1)
	big := json.RawMessage(`{"text":"` + strings.Repeat("x", 60_000) + `"}`)
	target := delivery.Target{Recipients: []int64{1}}
	dropped := false
	// Push until the socket's buffers are full, a write times out and the session is gone.
	deadline := time.Now().Add(60 * time.Second)
	for i := 1; time.Now().Before(deadline); i++ {
		msg := &message.Message{Topic: "grp_1", Seq: int64(i), MsgID: int64(i), Type: "text", Content: big}
		rep := h.commands.Sessions().Push(t.Context(), "t", target, delivery.Push{Kind: delivery.KindMessage, Message: msg})
		dropped = dropped || rep.Failed > 0
		if rep.Offline == 1 {
			if !dropped {
				t.Fatal("no push was dropped before the slow client was closed")
			}
			if _, env := other.call(wire.CmdHeartbeat, 4, struct{}{}); env.Code != 0 {
				t.Fatal("another connection was affected")
			}
			return
		}
		if rep.Failed > 0 {
			time.Sleep(10 * time.Millisecond)
		}
	}
	t.Fatal("the slow client's session was never closed")
}

func TestShutdownKicks(t *testing.T) {
	h := start(t, Config{})
	c := h.dial(t)
	c.auth(1, 1)
	stopped := make(chan error, 1)
	go func() { stopped <- h.ep.Stop(t.Context()) }()
	f, env := c.read()
	if f.Command != wire.CmdKick || string(env.Data) != `{"reason":"shutdown"}` {
		t.Fatalf("got command %d %s, want KICK shutdown", f.Command, env.Data)
	}
	_ = c.closed()
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	_, resp, err := cws.Dial(t.Context(), h.url, &cws.DialOptions{Subprotocols: []string{Subprotocol}})
	if err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("dial after stop: %v %v", resp, err)
	}
}

// Drain kicks like Stop, but over its window and with the endpoint still taking connections.
func TestDrainKicksAndKeepsServing(t *testing.T) {
	h := start(t, Config{})
	c := h.dial(t)
	c.auth(1, 1)
	h.ep.Drain(t.Context(), 0)
	f, env := c.read()
	if f.Command != wire.CmdKick || string(env.Data) != `{"reason":"shutdown"}` {
		t.Fatalf("got command %d %s, want KICK shutdown", f.Command, env.Data)
	}
	_ = c.closed()
	// The reconnect of a client the balancer still sent here is served, and a later drain
	// tells it too.
	again := h.dial(t)
	again.auth(1, 1)
	h.ep.Drain(t.Context(), 0)
	if f, _ := again.read(); f.Command != wire.CmdKick {
		t.Fatalf("the second drain sent command %d, want KICK", f.Command)
	}
}

func TestIdleTimeout(t *testing.T) {
	h := start(t, Config{IdleTimeout: 300 * time.Millisecond})
	c := h.dial(t)
	c.auth(1, 1)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	_, _, err := c.ws.Read(ctx)
	if err == nil || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("idle connection not closed: %v", err)
	}
}

// Rate limits are the TCP listener's: per connection (device) and per real address, which
// the local Nginx names in X-Real-IP.
func TestRateLimits(t *testing.T) {
	perMinute := func(n int) ratelimit.Rate { return ratelimit.Rate{Count: n, Per: time.Minute} }
	h := startWith(t, Config{}, dispatch.Config{RateLimits: dispatch.RateLimits{
		Device: dispatch.Budgets{Auth: perMinute(2)}, IP: dispatch.Budgets{Auth: perMinute(3)},
	}})
	badAuth := func(c *client) int {
		_, env := c.call(wire.CmdAuth, 1, wire.AuthRequest{Token: "nope", DeviceID: 1})
		return env.Code
	}
	via := func(ip string) *client {
		return h.dialWith(t, &cws.DialOptions{Subprotocols: []string{Subprotocol}, HTTPHeader: http.Header{"X-Real-IP": {ip}}})
	}
	a := via("203.0.113.5")
	for i, want := range []int{wire.CodeUnauthenticated, wire.CodeUnauthenticated, wire.CodeRateLimited} {
		if got := badAuth(a); got != want {
			t.Fatalf("attempt %d on one connection: code %d, want %d", i+1, got, want)
		}
	}
	b := via("203.0.113.5")
	if got := badAuth(b); got != wire.CodeUnauthenticated {
		t.Fatalf("the address's third attempt: code %d, want 40101", got)
	}
	if got := badAuth(b); got != wire.CodeRateLimited {
		t.Fatalf("the address's fourth attempt: code %d, want 42901", got)
	}
	if got := badAuth(via("203.0.113.6")); got != wire.CodeUnauthenticated {
		t.Fatalf("another address: code %d, want 40101", got)
	}
}

// A MESSAGE push a browser never acknowledges is given up, once its timeout passes or its
// connection closes, to whoever turns it into a MISSED_MESSAGE row.
func TestUnacknowledgedPushes(t *testing.T) {
	h := startWith(t, Config{}, dispatch.Config{PushAckTimeout: 100 * time.Millisecond})
	given := make(chan session.Unacked, 4)
	h.commands.Sessions().OnUnacked(func(u session.Unacked) { given <- u })
	c := h.dial(t)
	c.auth(1, 1)
	push := func(seq int64) {
		msg := &message.Message{Topic: "grp_1", Seq: seq, MsgID: seq, Type: "text", Content: json.RawMessage(`{}`)}
		if rep := h.commands.Sessions().Push(t.Context(), "t", delivery.Target{Recipients: []int64{1}},
			delivery.Push{Kind: delivery.KindMessage, Message: msg}); rep.Delivered != 1 {
			t.Fatalf("push %d: %+v", seq, rep)
		}
		c.read()
	}
	wait := func() session.Unacked {
		select {
		case u := <-given:
			return u
		case <-time.After(10 * time.Second):
			t.Fatal("nothing given up")
		}
		return session.Unacked{}
	}
	push(1)
	if u := wait(); u.Message.Seq != 1 || u.Closed || u.Device != 1 {
		t.Fatalf("timed out push: %+v", u)
	}
	h.commands.Sessions().OnUnacked(nil)
	h2 := startWith(t, Config{}, dispatch.Config{PushAckTimeout: time.Hour})
	h2.commands.Sessions().OnUnacked(func(u session.Unacked) { given <- u })
	h, c = h2, h2.dial(t)
	c.auth(1, 1)
	push(2)
	_ = c.ws.CloseNow()
	if u := wait(); u.Message.Seq != 2 || !u.Closed {
		t.Fatalf("push outstanding at close: %+v", u)
	}
}

func TestRealIP(t *testing.T) {
	tests := []struct{ remote, header, want string }{
		{"127.0.0.1:5000", "203.0.113.9", "203.0.113.9"},
		{"[::1]:5000", "2001:db8::1", "2001:db8::1"},
		{"192.0.2.7:5000", "203.0.113.9", "192.0.2.7"}, // not from the local Nginx: not believed
		{"127.0.0.1:5000", "", "127.0.0.1"},
		{"127.0.0.1:5000", "garbage", "127.0.0.1"},
	}
	for _, tt := range tests {
		r := httptest.NewRequest(http.MethodGet, "/ws", nil)
		r.RemoteAddr = tt.remote
		if tt.header != "" {
			r.Header.Set("X-Real-IP", tt.header)
		}
		if got := realIP(r).String(); got != tt.want {
			t.Errorf("%s with X-Real-IP %q: %s, want %s", tt.remote, tt.header, got, tt.want)
		}
	}
}
