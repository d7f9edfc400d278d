package server

import (
	"context"
	"encoding/binary"
	"errors"
	"net/netip"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/imdhq/imd/clients/go/frame"
	"github.com/imdhq/imd/clients/go/proxyheader"
	"github.com/imdhq/imd/clients/go/wire"
	"github.com/imdhq/imd/core/domain/apperr"
)

func TestHeartbeatWithoutAuth(t *testing.T) {
	h := start(t, Config{}, Deps{})
	c := h.dial(t)
	f, env := c.call(wire.CmdHeartbeat, struct{}{})
	if f.Command != wire.CmdHeartbeat || f.RequestID != 1000 {
		t.Fatalf("header %+v, want command 2 request_id 1000", f.Header)
	}
	if env.RequestID != "1000" {
		t.Fatalf("envelope request_id %q, want \"1000\"", env.RequestID)
	}
	var hb wire.HeartbeatResponse
	decodeData(t, env, &hb)
	if hb.ServerTime != testTime.UnixMilli() {
		t.Fatalf("server_time %d, want %d", hb.ServerTime, testTime.UnixMilli())
	}
	if got := h.metrics.count("tcp_frames_in_total"); got != 1 {
		t.Fatalf("tcp_frames_in_total %v, want 1", got)
	}
	if got := h.metrics.gauge("tcp_connections"); got != 1 {
		t.Fatalf("tcp_connections %v, want 1", got)
	}
}

func TestUnixSocketListener(t *testing.T) {
	path := filepath.Join(t.TempDir(), "imd.sock")
	h := start(t, Config{Addr: "unix:" + path}, Deps{})
	if got := h.srv.Addr().String(); got != path {
		t.Fatalf("Addr %q, want %q", got, path)
	}
	c := h.dial(t)
	if _, env := c.call(wire.CmdHeartbeat, struct{}{}); env.Code != wire.CodeOK {
		t.Fatalf("heartbeat code %d", env.Code)
	}
}

func TestCommandsBeforeAuth(t *testing.T) {
	h := start(t, Config{}, Deps{})
	tests := []struct {
		name    string
		cmd     uint16
		wantCmd uint16
	}{
		{"send answers on SEND_ACK", wire.CmdSendMessage, wire.CmdSendAck},
		{"sync answers on its FINISH", wire.CmdSyncMessages, wire.CmdSyncMessagesFinish},
		{"history", wire.CmdGetHistory, wire.CmdGetHistory},
		{"generate msg id", wire.CmdGenerateMsgID, wire.CmdGenerateMsgID},
		{"push ack", wire.CmdPushAck, wire.CmdPushAck},
		{"unknown command", 99, 99},
	}
	c := h.dial(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, env := c.call(tt.cmd, struct{}{})
			if f.Command != tt.wantCmd || env.Code != wire.CodeUnauthenticated || string(env.Data) != "null" {
				t.Fatalf("got command %d code %d data %s, want command %d code 40101 data null", f.Command, env.Code, env.Data, tt.wantCmd)
			}
		})
	}
}

func TestAuth(t *testing.T) {
	h := start(t, Config{}, Deps{})
	tests := []struct {
		name     string
		body     any
		wantCode int
	}{
		{"bad token", wire.AuthRequest{Token: "nope", DeviceID: 1}, wire.CodeUnauthenticated},
		{"missing device", wire.AuthRequest{Token: token(5)}, wire.CodeInvalidArgument},
		{"bad JSON", []int{1}, wire.CodeInvalidArgument},
		{"ok after failures", wire.AuthRequest{Token: token(5), DeviceID: 9}, wire.CodeOK},
		{"again on the same connection", wire.AuthRequest{Token: token(5), DeviceID: 9}, wire.CodeInvalidArgument},
	}
	c := h.dial(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, env := c.call(wire.CmdAuth, tt.body)
			if f.Command != wire.CmdAuth || env.Code != tt.wantCode {
				t.Fatalf("got command %d code %d %q, want command 1 code %d", f.Command, env.Code, env.Msg, tt.wantCode)
			}
			if tt.wantCode != wire.CodeOK {
				return
			}
			var resp wire.AuthResponse
			decodeData(t, env, &resp)
			want := wire.AuthResponse{UserID: 5, TenantID: "default", DeviceID: 9, ServerTime: testTime.UnixMilli()}
			if !reflect.DeepEqual(resp, want) {
				t.Fatalf("auth data %+v, want %+v", resp, want)
			}
		})
	}
	t.Run("unknown command after auth keeps its command", func(t *testing.T) {
		f, env := c.call(99, struct{}{})
		if f.Command != 99 || env.Code != wire.CodeInvalidArgument {
			t.Fatalf("got command %d code %d, want 99 and 40001", f.Command, env.Code)
		}
	})
	t.Run("push ack is not answered", func(t *testing.T) {
		c.send(wire.CmdPushAck, struct{}{})
		c.expectOpen(100 * time.Millisecond)
	})
}

func TestBadFramesClose(t *testing.T) {
	valid := func() []byte {
		f, err := frame.Append(nil, wire.CmdHeartbeat, 1, 1, []byte(`{}`), 0)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	tests := []struct {
		name  string
		bytes func() []byte
	}{
		{"bad magic", func() []byte { f := valid(); f[0] = 'X'; return f }},
		{"bad version", func() []byte { f := valid(); f[2] = 2; return f }},
		{"unknown flag", func() []byte { f := valid(); binary.BigEndian.PutUint16(f[5:], 2); return f }},
		{"body_length over 65536", func() []byte {
			f := valid()[:frame.HeaderLen]
			binary.BigEndian.PutUint32(f[19:], frame.MaxBody+1)
			return f
		}},
		{"corrupt compressed body", func() []byte {
			f := valid()
			binary.BigEndian.PutUint16(f[5:], frame.FlagCompressed)
			return f
		}},
	}
	h := start(t, Config{}, Deps{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := h.dial(t)
			c.write(tt.bytes())
			c.expectClosed()
		})
	}
}

func TestFramesSplitAcrossWrites(t *testing.T) {
	h := start(t, Config{}, Deps{})
	c := h.dial(t)
	var stream []byte
	for seq := uint32(1); seq <= 3; seq++ {
		f, err := frame.Append(nil, wire.CmdHeartbeat, uint64(seq), seq, []byte(`{}`), 0)
		if err != nil {
			t.Fatal(err)
		}
		stream = append(stream, f...)
	}
	// One byte at a time, then the rest at once: the decoder must wait and then take all.
	for _, b := range stream[:30] {
		c.write([]byte{b})
		time.Sleep(time.Millisecond)
	}
	c.write(stream[30:])
	for seq := uint32(1); seq <= 3; seq++ {
		if f := c.read(); f.SequenceID != seq || f.Command != wire.CmdHeartbeat {
			t.Fatalf("frame %d: %+v", seq, f.Header)
		}
	}
}

func TestProxyHeader(t *testing.T) {
	client := netip.MustParseAddrPort("203.0.113.7:51000")
	server := netip.MustParseAddrPort("127.0.0.1:9000")
	client6 := netip.MustParseAddrPort("[2001:db8::5]:4242")
	server6 := netip.MustParseAddrPort("[2001:db8::1]:443")
	tests := []struct {
		name   string
		header []byte
		wantIP string
	}{
		{"v1", proxyheader.AppendV1(nil, client, server), "203.0.113.7"},
		{"v2", proxyheader.AppendV2(nil, client, server), "203.0.113.7"},
		{"v2 IPv6", proxyheader.AppendV2(nil, client6, server6), "2001:db8::5"},
		{"v2 LOCAL keeps the peer", proxyheader.AppendV2(nil, netip.AddrPort{}, netip.AddrPort{}), "127.0.0.1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := start(t, Config{ProxyProtocol: true}, Deps{})
			c := h.dial(t)
			// The header and the first frame in one write: the frame must survive the header.
			hb, err := frame.Append(tt.header, wire.CmdHeartbeat, 7, 7, []byte(`{}`), 0)
			if err != nil {
				t.Fatal(err)
			}
			c.write(hb)
			if f := c.read(); f.SequenceID != 7 {
				t.Fatalf("heartbeat answer %+v", f.Header)
			}
			rec := h.logs.find("connection accepted")
			if rec == nil || rec["real_ip"] != tt.wantIP {
				t.Fatalf("accepted log %v, want real_ip %s", rec, tt.wantIP)
			}
			if got := h.metrics.count("realip_missing_total"); got != 0 {
				t.Fatalf("realip_missing_total %v, want 0", got)
			}
		})
	}
}

func TestProxyHeaderPartialWaits(t *testing.T) {
	h := start(t, Config{ProxyProtocol: true, ProxyTimeout: time.Second}, Deps{})
	header := proxyheader.AppendV1(nil, netip.MustParseAddrPort("198.51.100.9:1234"), netip.MustParseAddrPort("127.0.0.1:9000"))
	c := h.dial(t)
	c.write(header[:10])
	c.expectOpen(150 * time.Millisecond)
	c.write(header[10:])
	if _, env := c.call(wire.CmdHeartbeat, struct{}{}); env.Code != wire.CodeOK {
		t.Fatalf("heartbeat code %d", env.Code)
	}
	if rec := h.logs.find("connection accepted"); rec == nil || rec["real_ip"] != "198.51.100.9" {
		t.Fatalf("accepted log %v", rec)
	}
}

func TestProxyHeaderRefused(t *testing.T) {
	tests := []struct {
		name  string
		bytes []byte
	}{
		{"malformed", []byte("PROXY TCP4 garbage\r\n")},
		{"frames without a header", func() []byte {
			f, _ := frame.Append(nil, wire.CmdHeartbeat, 1, 1, []byte(`{}`), 0)
			return f
		}()},
		{"missing: nothing sent", nil},
		{"missing: header never completes", []byte("PROXY TCP4 1.2.3.4")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := start(t, Config{ProxyProtocol: true, ProxyTimeout: 200 * time.Millisecond}, Deps{})
			c := h.dial(t)
			if tt.bytes != nil {
				c.write(tt.bytes)
			}
			c.expectClosed()
			eventually(t, "realip_missing_total", func() bool { return h.metrics.count("realip_missing_total") == 1 })
		})
	}
}

func TestTaskPoolFull(t *testing.T) {
	tokens := &fakeTokens{entered: make(chan struct{}, 4), gate: make(chan struct{})}
	h := start(t, Config{Workers: 1, Queue: 1}, Deps{Auth: tokens})
	busy, queued, refused := h.dial(t), h.dial(t), h.dial(t)

	busy.send(wire.CmdAuth, wire.AuthRequest{Token: token(1), DeviceID: 1})
	<-tokens.entered // the only worker is now held
	queued.send(wire.CmdAuth, wire.AuthRequest{Token: token(2), DeviceID: 1})
	eventually(t, "queued AUTH", func() bool { return h.metrics.gauge("taskpool_depth") == 1 })

	f, env := refused.call(wire.CmdAuth, wire.AuthRequest{Token: token(3), DeviceID: 1})
	if f.Command != wire.CmdAuth || env.Code != wire.CodeBusy {
		t.Fatalf("got command %d code %d, want AUTH 50301", f.Command, env.Code)
	}
	if got := h.metrics.count("taskpool_rejected_total"); got != 1 {
		t.Fatalf("taskpool_rejected_total %v, want 1", got)
	}
	// HEARTBEAT does not need the pool.
	if _, env := refused.call(wire.CmdHeartbeat, struct{}{}); env.Code != wire.CodeOK {
		t.Fatalf("heartbeat code %d while the pool is full", env.Code)
	}

	close(tokens.gate)
	<-tokens.entered
	for _, c := range []*rawClient{busy, queued} {
		if env := envelope(t, c.read()); env.Code != wire.CodeOK {
			t.Fatalf("held AUTH code %d", env.Code)
		}
	}
	// A refused AUTH may be retried.
	if _, env := refused.call(wire.CmdAuth, wire.AuthRequest{Token: token(3), DeviceID: 1}); env.Code != wire.CodeOK {
		t.Fatalf("retried AUTH code %d %q", env.Code, env.Msg)
	}
}

func TestSecondAuthKicksFirst(t *testing.T) {
	h := start(t, Config{}, Deps{})
	first, second := h.dial(t), h.dial(t)
	first.auth(4, 77)
	second.auth(4, 77)

	kick := first.read()
	if kick.Command != wire.CmdKick {
		t.Fatalf("first connection got command %d, want KICK", kick.Command)
	}
	var k wire.Kick
	decodeData(t, envelope(t, kick), &k)
	if k.Reason != wire.KickReasonReplaced {
		t.Fatalf("kick reason %q", k.Reason)
	}
	first.expectClosed()

	// The newer connection is the device's only one and keeps working.
	if _, env := second.call(wire.CmdHeartbeat, struct{}{}); env.Code != wire.CodeOK {
		t.Fatalf("second connection heartbeat code %d", env.Code)
	}
	eventually(t, "first connection gone", func() bool { return h.metrics.gauge("tcp_connections") == 1 })
}

func TestKick(t *testing.T) {
	h := start(t, Config{}, Deps{})
	a, b, other := h.dial(t), h.dial(t), h.dial(t)
	a.auth(8, 1)
	b.auth(8, 2)
	other.auth(9, 1)
	if n := h.srv.Kick("default", 8, 0, "banned"); n != 2 {
		t.Fatalf("kicked %d connections, want 2", n)
	}
	for _, c := range []*rawClient{a, b} {
		var k wire.Kick
		decodeData(t, envelope(t, c.read()), &k)
		if k.Reason != "banned" {
			t.Fatalf("reason %q", k.Reason)
		}
		c.expectClosed()
	}
	if _, env := other.call(wire.CmdHeartbeat, struct{}{}); env.Code != wire.CodeOK {
		t.Fatalf("other user's heartbeat code %d", env.Code)
	}
}

func TestIdleTimeout(t *testing.T) {
	h := start(t, Config{IdleTimeout: 300 * time.Millisecond}, Deps{})
	c := h.dial(t)
	for range 3 { // traffic keeps it open past the timeout
		time.Sleep(150 * time.Millisecond) // silence shorter than the timeout: time passing is what is tested
		if _, env := c.call(wire.CmdHeartbeat, struct{}{}); env.Code != wire.CodeOK {
			t.Fatalf("heartbeat code %d", env.Code)
		}
	}
	c.expectClosed()
}

func TestStopDrainsAcceptedRequests(t *testing.T) {
	tokens := &fakeTokens{entered: make(chan struct{}, 1), gate: make(chan struct{})}
	h := start(t, Config{}, Deps{Auth: tokens})
	c := h.dial(t)
	c.send(wire.CmdAuth, wire.AuthRequest{Token: token(1), DeviceID: 1})
	<-tokens.entered

	// What the AUTH had done when Stop returned is read then, so an early return fails the
	// test however late the gate opens, with no window to wait out.
	type stop struct {
		err    error
		passed int64
	}
	stopped := make(chan stop, 1)
	go func() {
		err := h.srv.Stop(context.WithoutCancel(t.Context()))
		stopped <- stop{err, tokens.passed.Load()}
	}()
	eventually(t, "stopping", h.srv.stopping.Load)
	if _, env := c.call(wire.CmdGenerateMsgID, struct{}{}); env.Code != wire.CodeBusy {
		t.Fatalf("request during shutdown: code %d, want 50301", env.Code)
	}
	close(tokens.gate)
	if env := envelope(t, c.read()); env.Code != wire.CodeOK {
		t.Fatalf("accepted AUTH answered %d during shutdown", env.Code)
	}
	st := <-stopped
	if st.err != nil {
		t.Fatalf("stop: %v", st.err)
	}
	if st.passed != 1 {
		t.Fatal("Stop returned before the accepted AUTH finished")
	}
	c.expectClosed()
}

func TestStartFailsOnBusyAddress(t *testing.T) {
	h := start(t, Config{}, Deps{})
	other := New(Config{Addr: h.srv.Addr().String()}, Deps{Metrics: newFakeMetrics()}, h.srv.log)
	if err := other.Start(t.Context()); err == nil {
		_ = other.Stop(t.Context())
		t.Fatal("second listener on the same address started")
	}
}

func TestRequestContext(t *testing.T) {
	const (
		cmdWait  = 200
		cmdPanic = 201
	)
	ended := make(chan error, 1)
	entered := make(chan struct{}, 1) // a cmdWait handler runs
	handlers := func(s *Server) {
		s.Dispatcher().Handle(cmdWait, func(ctx context.Context) (any, error) {
			select {
			case entered <- struct{}{}:
			default:
			}
			<-ctx.Done()
			ended <- ctx.Err()
			return nil, apperr.Wrap(apperr.Busy, "gave up", ctx.Err())
		})
		s.Dispatcher().Handle(cmdPanic, func(context.Context) (any, error) { panic("boom") })
	}

	t.Run("deadline", func(t *testing.T) {
		h := start(t, Config{RequestTimeout: 50 * time.Millisecond}, Deps{}, handlers)
		c := h.dial(t)
		c.auth(1, 1)
		if _, env := c.call(cmdWait, struct{}{}); env.Code != wire.CodeBusy {
			t.Fatalf("code %d, want 50301", env.Code)
		}
		if err := <-ended; !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("handler context ended with %v, want DeadlineExceeded", err)
		}
	})
	t.Run("connection closed", func(t *testing.T) {
		h := start(t, Config{RequestTimeout: time.Minute}, Deps{}, handlers)
		c := h.dial(t)
		c.auth(1, 1)
		select { // the deadline subtest's handler entered too
		case <-entered:
		default:
		}
		c.send(cmdWait, struct{}{})
		select {
		case <-entered:
		case <-time.After(3 * time.Second):
			t.Fatal("the request did not reach its handler")
		}
		_ = c.nc.Close()
		select {
		case err := <-ended:
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("handler context ended with %v, want Canceled", err)
			}
		case <-time.After(3 * time.Second):
			t.Fatal("closing the connection did not cancel its request")
		}
	})
	t.Run("panic", func(t *testing.T) {
		h := start(t, Config{}, Deps{}, handlers)
		c := h.dial(t)
		c.auth(1, 1)
		if f, env := c.call(cmdPanic, struct{}{}); f.Command != cmdPanic || env.Code != wire.CodeInternal {
			t.Fatalf("command %d code %d, want %d and 50001", f.Command, env.Code, cmdPanic)
		}
		if _, env := c.call(wire.CmdHeartbeat, struct{}{}); env.Code != wire.CodeOK {
			t.Fatal("connection unusable after a handler panic")
		}
		rec := h.logs.find("tcp request", "command", "201")
		want := map[string]string{"code": "50001", "user_id": "1", "device_id": "1", "real_ip": "127.0.0.1"}
		for k, v := range want {
			if rec[k] != v {
				t.Fatalf("log line %v: %s = %q, want %q", rec, k, rec[k], v)
			}
		}
		if rec["trace_id"] == "" || rec["connection_id"] == "" || !strings.Contains(rec["err"], "boom") {
			t.Fatalf("log line %v lacks trace_id, connection_id or the panic", rec)
		}
	})
}
