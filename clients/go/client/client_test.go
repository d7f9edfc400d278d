package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/imdhq/imd/clients/go/frame"
	"github.com/imdhq/imd/clients/go/proxyheader"
	"github.com/imdhq/imd/clients/go/wire"
)

func dial(t *testing.T, o Options) *Conn {
	t.Helper()
	c, err := Dial(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestDialVariants(t *testing.T) {
	serverTLS, clientTLS := testTLS(t)
	namedTLS := clientTLS.Clone()
	namedTLS.ServerName = "im.example.com"
	source := netip.MustParseAddrPort("198.51.100.9:40000")
	unixPath := filepath.Join(t.TempDir(), "imd.sock")

	tests := []struct {
		name       string
		network    string
		listen     string
		serverOpts []serverOption
		opts       Options
		wantHeader func(c *Conn) []byte // the PROXY header the server must see
	}{
		{name: "plain TCP", network: "tcp", listen: "127.0.0.1:0"},
		{name: "PROXY v1", network: "tcp", listen: "127.0.0.1:0", serverOpts: []serverOption{withProxy()},
			opts: Options{ProxyHeader: 1}, wantHeader: v1From(localAddrPort)},
		{name: "PROXY v2", network: "tcp", listen: "127.0.0.1:0", serverOpts: []serverOption{withProxy()},
			opts: Options{ProxyHeader: 2}, wantHeader: v2From(localAddrPort)},
		{name: "PROXY v2 with ProxySource", network: "tcp", listen: "127.0.0.1:0", serverOpts: []serverOption{withProxy()},
			opts: Options{ProxyHeader: 2, ProxySource: source}, wantHeader: v2From(fixed(source))},
		{name: "TLS, ServerName from Addr", network: "tcp", listen: "127.0.0.1:0", serverOpts: []serverOption{withTLS(serverTLS)},
			opts: Options{TLS: clientTLS}},
		{name: "PROXY v1 then TLS", network: "tcp", listen: "127.0.0.1:0", serverOpts: []serverOption{withProxy(), withTLS(serverTLS)},
			opts: Options{ProxyHeader: 1, TLS: namedTLS, ProxySource: source}, wantHeader: v1From(fixed(source))},
		{name: "PROXY v2 then TLS from 127.0.0.2", network: "tcp", listen: "127.0.0.1:0", serverOpts: []serverOption{withProxy(), withTLS(serverTLS)},
			opts: Options{ProxyHeader: 2, TLS: namedTLS, LocalAddr: "127.0.0.2"}, wantHeader: v2From(localAddrPort)},
		{name: "unix socket with PROXY v1", network: "unix", listen: unixPath, serverOpts: []serverOption{withProxy()},
			opts:       Options{ProxyHeader: 1, ProxySource: source},
			wantHeader: func(*Conn) []byte { return proxyheader.AppendV1(nil, source, netip.MustParseAddrPort("127.0.0.1:443")) }},
		{name: "unix socket with PROXY v2, no source", network: "unix", listen: unixPath + "2", serverOpts: []serverOption{withProxy()},
			opts: Options{ProxyHeader: 2}, wantHeader: func(*Conn) []byte { return proxyheader.AppendV2(nil, netip.AddrPort{}, netip.AddrPort{}) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := startServer(t, tt.network, tt.listen, tt.serverOpts...)
			o := tt.opts
			o.Addr = srv.addr()
			c := dial(t, o)
			ss := srv.nextSession()
			if err := c.Heartbeat(context.Background()); err != nil {
				t.Fatalf("Heartbeat: %v", err)
			}
			if tt.wantHeader != nil {
				if want := tt.wantHeader(c); !bytes.Equal(ss.proxyHeader, want) {
					t.Errorf("server saw PROXY header %q, want %q", ss.proxyHeader, want)
				}
			}
			if o.LocalAddr != "" {
				if got := localAddrPort(c).Addr().String(); got != o.LocalAddr {
					t.Errorf("bound to %s, want %s", got, o.LocalAddr)
				}
			}
		})
	}
}

func localAddrPort(c *Conn) netip.AddrPort { return tcpAddrPort(c.nc.LocalAddr()) }

func fixed(ap netip.AddrPort) func(*Conn) netip.AddrPort {
	return func(*Conn) netip.AddrPort { return ap }
}

// v1From and v2From are the header from source(c) to the server's address.
func v1From(source func(*Conn) netip.AddrPort) func(*Conn) []byte {
	return func(c *Conn) []byte { return proxyheader.AppendV1(nil, source(c), tcpAddrPort(c.nc.RemoteAddr())) }
}

func v2From(source func(*Conn) netip.AddrPort) func(*Conn) []byte {
	return func(c *Conn) []byte { return proxyheader.AppendV2(nil, source(c), tcpAddrPort(c.nc.RemoteAddr())) }
}

func TestDialErrors(t *testing.T) {
	srv := startServer(t, "tcp", "127.0.0.1:0")
	_, clientTLS := testTLS(t)
	tests := []struct {
		name string
		opts Options
	}{
		{"bad ProxyHeader", Options{Addr: srv.addr(), ProxyHeader: 3}},
		{"bad LocalAddr", Options{Addr: srv.addr(), LocalAddr: "not-an-ip"}},
		{"LocalAddr on unix", Options{Addr: "unix:/nonexistent", LocalAddr: "127.0.0.1"}},
		{"refused", Options{Addr: "127.0.0.1:1"}},
		{"TLS against plaintext server", Options{Addr: srv.addr(), TLS: clientTLS, DialTimeout: time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if c, err := Dial(context.Background(), tt.opts); err == nil {
				c.Close()
				t.Fatal("Dial succeeded")
			}
		})
	}
}

func TestTypedHelpers(t *testing.T) {
	srv := startServer(t, "tcp", "127.0.0.1:0")
	c := dial(t, Options{Addr: srv.addr()})
	ctx := context.Background()

	var codeErr *CodeError
	if _, err := c.Auth(ctx, "wrong", 1); !errors.As(err, &codeErr) || codeErr.Code != wire.CodeUnauthenticated {
		t.Fatalf("Auth with a bad token: %v", err)
	}
	auth, err := c.Auth(ctx, goodToken, 18446744073709551615)
	if err != nil || auth.UserID != userID || auth.DeviceID != 18446744073709551615 {
		t.Fatalf("Auth = %+v, %v", auth, err)
	}

	ack, err := c.Send(ctx, wire.SendMessageRequest{Topic: "grp_1", ClientMsgID: "m1", Type: wire.TypeText, Content: json.RawMessage(`{"text":"hi"}`)})
	if err != nil || ack.ClientMsgID != "m1" || ack.MsgID != 100 {
		t.Fatalf("Send = %+v, %v", ack, err)
	}
	big := json.RawMessage(`{"text":"` + strings.Repeat("x", 2000) + `"}`)
	if _, err := c.Send(ctx, wire.SendMessageRequest{Topic: "grp_1", ClientMsgID: "m2", Type: wire.TypeText, Content: big}); !errors.As(err, &codeErr) || codeErr.Code != wire.CodeTooLarge {
		t.Fatalf("Send too large: %v", err)
	}

	history, err := c.History(ctx, "grp_1", 10, 3)
	if err != nil || len(history) != 3 || history[0].Seq != 9 || history[2].Seq != 7 {
		t.Fatalf("History = %+v, %v", history, err)
	}

	tests := []struct {
		since    int64
		wantSeqs []int64
	}{
		{0, []int64{1, 2, 3, 4, 5}},
		{3, []int64{4, 5}},
		{5, nil},
	}
	for _, tt := range tests {
		msgs, finish, err := c.SyncMessages(ctx, "grp_1", tt.since, 0)
		if err != nil || finish.LastSeq != 5 || finish.Topic != "grp_1" {
			t.Fatalf("SyncMessages since %d: finish %+v, %v", tt.since, finish, err)
		}
		var seqs []int64
		for _, m := range msgs {
			seqs = append(seqs, m.Seq)
		}
		if fmt.Sprint(seqs) != fmt.Sprint(tt.wantSeqs) {
			t.Errorf("SyncMessages since %d: seqs %v, want %v", tt.since, seqs, tt.wantSeqs)
		}
	}
	if _, _, err := c.SyncMessages(ctx, "grp_denied", 0, 0); !errors.As(err, &codeErr) || codeErr.Code != wire.CodeForbidden {
		t.Fatalf("SyncMessages denied: %v", err)
	}
}

func TestRequestStreamEnvelopes(t *testing.T) {
	srv := startServer(t, "tcp", "127.0.0.1:0")
	c := dial(t, Options{Addr: srv.addr()})
	envs, err := c.RequestStream(context.Background(), wire.CmdSyncMessages, wire.SyncMessagesRequest{Topic: "grp_1", SinceSeq: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(envs) != 3 { // pages {2,3}, {4,5}, then FINISH
		t.Fatalf("%d envelopes, want 3", len(envs))
	}
	var finish wire.SyncMessagesFinish
	if err := json.Unmarshal(envs[2].Data, &finish); err != nil || finish.LastSeq != 5 {
		t.Fatalf("last envelope is not the FINISH: %s", envs[2].Data)
	}

	if _, err := c.RequestStream(context.Background(), wire.CmdHeartbeat, nil); err == nil {
		t.Error("RequestStream accepted a one-response command")
	}
	if _, err := c.Request(context.Background(), wire.CmdSyncInbox, nil); err == nil {
		t.Error("Request accepted a stream command")
	}
}

func TestConcurrentRequestsAnsweredOutOfOrder(t *testing.T) {
	const workers, perWorker = 32, 50
	// Answers each READ_MESSAGE after a random delay, so responses overtake
	// each other.
	srv := startServer(t, "tcp", "127.0.0.1:0", withHandler(func(ss *session, f frame.Frame) {
		go func() {
			time.Sleep(time.Duration(rand.IntN(2000)) * time.Microsecond)
			defaultHandler(ss, f)
		}()
	}))
	c := dial(t, Options{Addr: srv.addr(), CompressMin: 16})

	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := range perWorker {
				seq := int64(w*perWorker + i)
				topic := fmt.Sprintf("grp_%d_%s", w, strings.Repeat("t", i)) // some bodies get compressed
				env, err := c.Request(context.Background(), wire.CmdReadMessage, wire.ReadRequest{Topic: topic, Seq: seq})
				if err != nil {
					errs <- err
					return
				}
				var resp wire.ReadResponse
				if err := json.Unmarshal(env.Data, &resp); err != nil || resp.Seq != seq || resp.Topic != topic {
					errs <- fmt.Errorf("request %d got %s (%v)", seq, env.Data, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestPushes(t *testing.T) {
	srv := startServer(t, "tcp", "127.0.0.1:0")
	c := dial(t, Options{Addr: srv.addr()})
	ss := srv.nextSession()
	ctx := context.Background()

	msg := testMessage("grp_1", 9)
	ss.push(wire.CmdMessage, 777, msg)
	ss.push(wire.CmdEvent, 778, wire.Event{"type": json.RawMessage(`"friend_added"`)})

	p := <-c.Pushes()
	if p.Command != wire.CmdMessage || p.SequenceID != 777 || p.Message == nil || p.Message.Seq != 9 || p.Message.MsgID != msg.MsgID {
		t.Fatalf("first push = %+v", p)
	}
	ackFrame := ss.nextFrame()
	if ackFrame.Command != wire.CmdPushAck || ackFrame.SequenceID != 777 || string(ackFrame.Body) != "{}" {
		t.Fatalf("PUSH_ACK = cmd %d seq %d body %q", ackFrame.Command, ackFrame.SequenceID, ackFrame.Body)
	}
	p = <-c.Pushes()
	var ev wire.Event
	if p.Command != wire.CmdEvent || p.Message != nil || json.Unmarshal(p.Envelope.Data, &ev) != nil || string(ev["type"]) != `"friend_added"` {
		t.Fatalf("second push = %+v", p)
	}

	// A READ_MESSAGE push from another device that happens to carry the
	// sequence_id of a pending READ_MESSAGE must not be taken for its answer.
	done := make(chan error, 1)
	go func() {
		env, err := c.Request(ctx, wire.CmdReadMessage, wire.ReadRequest{Topic: holdTopic, Seq: 2})
		if err == nil && !bytes.Contains(env.Data, []byte(holdTopic)) {
			err = fmt.Errorf("answer %s", env.Data)
		}
		done <- err
	}()
	f := ss.nextFrame()
	ss.push(wire.CmdReadMessage, f.SequenceID, wire.ReadResponse{Topic: "grp_other", Seq: 1})
	p = <-c.Pushes()
	if p.Command != wire.CmdReadMessage || !bytes.Contains(p.Envelope.Data, []byte("grp_other")) {
		t.Fatalf("colliding push = %+v", p)
	}
	ss.ok(f, wire.CmdReadMessage, wire.ReadResponse{Topic: holdTopic, Seq: 2})
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// A burst of pushes is acknowledged whole, in order, even while the caller is not draining
// Pushes: the reader writes the acks it gathered before it waits for the caller.
func TestPushAcksOfABurst(t *testing.T) {
	srv := startServer(t, "tcp", "127.0.0.1:0")
	c := dial(t, Options{Addr: srv.addr(), PushBuffer: 2})
	ss := srv.nextSession()
	const n = 20
	for i := range n {
		ss.push(wire.CmdMessage, uint32(100+i), testMessage("grp_1", int64(i+1)))
	}
	wantAck := func(i int) {
		t.Helper()
		if f := ss.nextFrame(); f.Command != wire.CmdPushAck || f.SequenceID != uint32(100+i) {
			t.Fatalf("ack %d = cmd %d seq %d, want PUSH_ACK seq %d", i, f.Command, f.SequenceID, 100+i)
		}
	}
	// Two pushes queued and a third waiting for room: all three acknowledged already.
	for i := range 3 {
		wantAck(i)
	}
	for i := range n {
		if p := <-c.Pushes(); p.Message == nil || p.Message.Seq != int64(i+1) {
			t.Fatalf("push %d = %+v", i, p)
		}
	}
	for i := 3; i < n; i++ {
		wantAck(i)
	}
}

// BenchmarkReadMessages is the client's read path for MESSAGE pushes arriving in bursts:
// frame, decode, PUSH_ACK, hand over. A load generator reads hundreds of thousands a second.
func BenchmarkReadMessages(b *testing.B) {
	server, client := net.Pipe()
	go func() { _, _ = io.Copy(io.Discard, server) }() // the acks
	body, err := wire.OK(0, testMessage("grp_1", 42))
	if err != nil {
		b.Fatal(err)
	}
	one, err := frame.Append(nil, wire.CmdMessage, 0, 1, body, 0)
	if err != nil {
		b.Fatal(err)
	}
	const perBurst = 64
	burst := bytes.Repeat(one, perBurst)
	c := newConn(client, Options{PushBuffer: 1024, RequestTimeout: time.Minute})
	defer c.Close()
	go func() {
		for sent := 0; sent < b.N; sent += perBurst {
			if _, err := server.Write(burst); err != nil {
				return
			}
		}
	}()
	b.ReportAllocs()
	for range b.N {
		if p := <-c.Pushes(); p.Message == nil {
			b.Fatalf("push %+v", p)
		}
	}
}

func TestServerCloseAndKick(t *testing.T) {
	srv := startServer(t, "tcp", "127.0.0.1:0")
	c := dial(t, Options{Addr: srv.addr()})
	ss := srv.nextSession()

	pending := make(chan error, 1)
	go func() {
		_, err := c.Request(context.Background(), wire.CmdEditMessage, wire.EditRequest{Topic: "grp_1"})
		pending <- err
	}()
	ss.nextFrame() // the EDIT_MESSAGE, never answered
	ss.push(wire.CmdKick, 1, wire.Kick{Reason: wire.KickReasonReplaced})
	ss.conn.Close()

	p := <-c.Pushes()
	var kick wire.Kick
	if p.Command != wire.CmdKick || json.Unmarshal(p.Envelope.Data, &kick) != nil || kick.Reason != wire.KickReasonReplaced {
		t.Fatalf("push = %+v", p)
	}
	if err := <-pending; !errors.Is(err, io.EOF) {
		t.Fatalf("pending request: %v, want io.EOF", err)
	}
	<-c.Closed()
	if _, ok := <-c.Pushes(); ok {
		t.Fatal("Pushes not closed")
	}
	if !errors.Is(c.Err(), io.EOF) {
		t.Fatalf("Err = %v", c.Err())
	}
	if err := c.Heartbeat(context.Background()); !errors.Is(err, io.EOF) {
		t.Fatalf("request after close: %v", err)
	}
}

func TestClose(t *testing.T) {
	srv := startServer(t, "tcp", "127.0.0.1:0")
	c := dial(t, Options{Addr: srv.addr(), PushBuffer: 1})
	ss := srv.nextSession()
	if c.Err() != nil {
		t.Fatalf("Err on an open connection: %v", c.Err())
	}

	pending := make(chan error, 1)
	go func() {
		_, err := c.Request(context.Background(), wire.CmdDeleteMessages, wire.DeleteRequest{Topic: "grp_1", Low: 1, Hi: 2})
		pending <- err
	}()
	ss.nextFrame()
	// Fill the pushes channel and leave the reader blocked on it: Close must
	// still return.
	for i := range 3 {
		ss.push(wire.CmdEvent, uint32(i), wire.Event{})
	}
	// No event says the reader is blocked on the full channel; this gives it time to get there,
	// and Close must return whether it did or not.
	time.Sleep(50 * time.Millisecond)

	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := <-pending; !errors.Is(err, ErrClosed) {
		t.Fatalf("pending request: %v, want ErrClosed", err)
	}
	if err := c.Heartbeat(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("request after Close: %v", err)
	}
	if !errors.Is(c.Err(), ErrClosed) {
		t.Fatalf("Err = %v", c.Err())
	}
	if err := <-ss.readErr; !isClosedRead(err) {
		t.Fatalf("server read: %v", err)
	}
}

func TestRequestTimeoutAndLateAnswer(t *testing.T) {
	srv := startServer(t, "tcp", "127.0.0.1:0")
	c := dial(t, Options{Addr: srv.addr(), RequestTimeout: 50 * time.Millisecond})
	ss := srv.nextSession()

	_, err := c.Request(context.Background(), wire.CmdGenerateMsgID, nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want DeadlineExceeded", err)
	}
	f := ss.nextFrame()
	if string(f.Body) != "{}" {
		t.Errorf("nil body sent as %q", f.Body)
	}
	ss.ok(f, wire.CmdGenerateMsgID, wire.GenerateMsgIDResponse{MsgID: 5})
	if p := <-c.Pushes(); p.Command != wire.CmdGenerateMsgID || p.SequenceID != f.SequenceID {
		t.Fatalf("late answer delivered as %+v", p)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Request(ctx, wire.CmdGenerateMsgID, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	if c.Err() != nil {
		t.Fatalf("a timeout closed the connection: %v", c.Err())
	}
}

func TestProtocolViolations(t *testing.T) {
	tests := []struct {
		name       string
		answer     func(ss *session, f frame.Frame)
		connClosed bool
	}{
		{"wrong response command", func(ss *session, f frame.Frame) { ss.ok(f, wire.CmdHeartbeat, struct{}{}) }, false},
		{"envelope request_id differs", func(ss *session, f frame.Frame) {
			body, _ := wire.OK(f.RequestID+1, struct{}{})
			ss.send(f.Command, f.RequestID, f.SequenceID, body, 0)
		}, false},
		{"body is not an envelope", func(ss *session, f frame.Frame) {
			ss.send(f.Command, f.RequestID, f.SequenceID, []byte("not json"), 0)
		}, true},
		{"bad frame magic", func(ss *session, f frame.Frame) { ss.conn.Write([]byte("HTTP/1.1 400 Bad Request\r\n\r\n")) }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := startServer(t, "tcp", "127.0.0.1:0", withHandler(tt.answer))
			c := dial(t, Options{Addr: srv.addr()})
			_, err := c.Request(context.Background(), wire.CmdGenerateMsgID, nil)
			if tt.name == "bad frame magic" {
				if !errors.Is(err, frame.ErrBadMagic) {
					t.Fatalf("err = %v, want ErrBadMagic", err)
				}
			} else if !errors.Is(err, ErrProtocol) {
				t.Fatalf("err = %v, want ErrProtocol", err)
			}
			if closed := c.Err() != nil; closed != tt.connClosed {
				t.Fatalf("connection closed = %v (%v), want %v", closed, c.Err(), tt.connClosed)
			}
		})
	}
}

func TestLargeAndCompressedFrames(t *testing.T) {
	var gotFlags []uint16
	var mu sync.Mutex
	srv := startServer(t, "tcp", "127.0.0.1:0", withHandler(func(ss *session, f frame.Frame) {
		mu.Lock()
		gotFlags = append(gotFlags, f.Flags)
		mu.Unlock()
		// Echo the request body back inside the data, compressing big answers.
		body := append(append([]byte(`{"code":0,"msg":"ok","request_id":"`+fmt.Sprint(f.RequestID)+`","data":`), f.Body...), '}')
		ss.send(f.Command, f.RequestID, f.SequenceID, body, 512)
	}))
	c := dial(t, Options{Addr: srv.addr(), CompressMin: 512})

	incompressible := randomText(30000)
	tests := []struct {
		name         string
		text         string
		wantCompress bool
	}{
		{"small", "hi", false},
		{"compressible, large when inflated", strings.Repeat("hello ", 100000), true},
		{"larger than the read buffer", incompressible, true},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := map[string]string{"text": tt.text}
			env, err := c.Request(context.Background(), wire.CmdEditMessage, req)
			if err != nil {
				t.Fatal(err)
			}
			var back map[string]string
			if err := json.Unmarshal(env.Data, &back); err != nil || back["text"] != tt.text {
				t.Fatalf("echo differs (%v)", err)
			}
			mu.Lock()
			defer mu.Unlock()
			if compressed := gotFlags[i]&frame.FlagCompressed != 0; compressed != tt.wantCompress {
				t.Errorf("request compressed = %v, want %v", compressed, tt.wantCompress)
			}
		})
	}
	// Fresh random text, not a repeat of a shorter one: zlib at BestSpeed
	// sometimes finds a repeat 30,000 bytes back (about 1 in 1,000) and packs it
	// under MaxBody. 150,000 characters of 36 kinds carry about 97,000 bytes of
	// entropy, so no compressor brings them under 65,536.
	oversized := randomText(150000)
	if _, err := c.Request(context.Background(), wire.CmdEditMessage, map[string]string{"text": oversized}); !errors.Is(err, frame.ErrTooLarge) {
		t.Fatalf("oversized request: %v, want ErrTooLarge", err)
	}
	if c.Err() != nil {
		t.Fatalf("an unencodable request closed the connection: %v", c.Err())
	}
}

// randomText returns n characters drawn at random from 36 letters and digits:
// text that compresses to about two thirds of its size and needs no JSON escape.
func randomText(n int) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[rand.IntN(len(alphabet))]
	}
	return string(b)
}

func TestWriteRaw(t *testing.T) {
	srv := startServer(t, "tcp", "127.0.0.1:0")
	c := dial(t, Options{Addr: srv.addr()})
	ss := srv.nextSession()
	header, err := frame.Append(nil, wire.CmdHeartbeat, 1, 1, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	header[0] = 'X'
	if err := c.WriteRaw(header); err != nil {
		t.Fatal(err)
	}
	if err := <-ss.readErr; !errors.Is(err, frame.ErrBadMagic) {
		t.Fatalf("server read: %v, want ErrBadMagic", err)
	}
}
