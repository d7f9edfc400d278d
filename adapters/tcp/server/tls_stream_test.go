package server

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/protocol/tlstest"
	"github.com/imdhq/imd/clients/go/frame"
	"github.com/imdhq/imd/clients/go/proxyheader"
	"github.com/imdhq/imd/clients/go/wire"
	"github.com/imdhq/imd/core/domain/delivery"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/seq"
	"github.com/imdhq/imd/ports"
)

// corkConn holds the client's writes until the client reads or Flush is called, so that what
// a TLS client writes last in its handshake (its Finished) and its first frame leave in one
// TCP segment, as OpenSSL clients and event-loop clients often send them. After Flush,
// writes go straight out.
type corkConn struct {
	net.Conn
	mu       sync.Mutex
	pending  []byte
	uncorked bool
}

func (c *corkConn) Write(b []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.uncorked {
		return c.Conn.Write(b)
	}
	c.pending = append(c.pending, b...)
	return len(b), nil
}

func (c *corkConn) Read(b []byte) (int, error) {
	if err := c.send(); err != nil {
		return 0, err
	}
	return c.Conn.Read(b)
}

// send writes what is held.
func (c *corkConn) send() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.pending) == 0 {
		return nil
	}
	_, err := c.Conn.Write(c.pending)
	c.pending = nil
	return err
}

// Flush writes what is held and stops holding.
func (c *corkConn) Flush() error {
	err := c.send()
	c.mu.Lock()
	c.uncorked = true
	c.mu.Unlock()
	return err
}

// nativeTLS is a native-mode server behind a proxy that checks every byte it sends is part
// of a TLS record.
type nativeTLS struct {
	h     *harness
	proxy *tlstest.Proxy
	pki   testPKI
	// proxyHeader is what clients send before the ClientHello: a PROXY v2 header when the
	// server requires one.
	proxyHeader []byte
}

func startNative(t *testing.T, cfg Config, deps Deps) *nativeTLS {
	t.Helper()
	pki := newTestPKI(t)
	cfg.TLS = pki.server
	n := &nativeTLS{h: start(t, cfg, deps), pki: pki}
	n.proxy = tlstest.NewProxy(t, n.h.srv.Addr().String(), nil)
	if cfg.ProxyProtocol {
		n.proxyHeader = proxyheader.AppendV2(nil, netip.MustParseAddrPort("198.51.100.7:40000"), netip.MustParseAddrPort("127.0.0.1:9000"))
	}
	return n
}

// dialCorked opens a TCP connection through the proxy, sends the PROXY header and returns
// the corked socket for a TLS client; the test's end closes it.
func (n *nativeTLS) dialCorked(t testing.TB) *corkConn {
	t.Helper()
	c, err := n.dial(t)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// dial is dialCorked for any goroutine.
func (n *nativeTLS) dial(t testing.TB) (*corkConn, error) {
	nc, err := net.Dial("tcp", n.proxy.Addr())
	if err != nil {
		return nil, fmt.Errorf("dial: %w", err)
	}
	t.Cleanup(func() { _ = nc.Close() })
	if _, err := nc.Write(n.proxyHeader); err != nil {
		return nil, fmt.Errorf("PROXY header: %w", err)
	}
	return &corkConn{Conn: nc}, nil
}

// frameOf encodes a request; compressMin > 0 compresses a body of at least that size.
func frameOf(cmd uint16, seq uint32, body any, compressMin int) ([]byte, error) {
	raw, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	return frame.Append(nil, cmd, uint64(seq)*10, seq, raw, compressMin)
}

// The first frame is answered however it arrives: in the TCP segment of the client's
// Finished (TLS 1.3, and TLS 1.2 resumption where the client finishes last), or right after
// it; both before and after AUTH matters to the server.
func TestTLSFirstFrameAlwaysAnswered(t *testing.T) {
	const connections = 40
	tests := []struct {
		name     string
		version  uint16
		resume   bool
		coalesce bool
	}{
		{"TLS 1.3, first frame with Finished", tls.VersionTLS13, false, true},
		{"TLS 1.3, first frame after Finished", tls.VersionTLS13, false, false},
		{"TLS 1.3 resumed, first frame with Finished", tls.VersionTLS13, true, true},
		{"TLS 1.2, first frame after the server's Finished", tls.VersionTLS12, false, false},
		{"TLS 1.2 resumed, first frame with Finished", tls.VersionTLS12, true, true},
	}
	requests := []struct {
		name     string
		cmd      uint16
		body     any
		wantCode int
	}{
		{"HEARTBEAT", wire.CmdHeartbeat, struct{}{}, wire.CodeOK},
		{"SEND_MESSAGE before AUTH", wire.CmdSendMessage, wire.SendMessageRequest{ToUser: 2, ClientMsgID: "x", Type: "text", Content: text("hi")}, 40101},
	}
	n := startNative(t, Config{ProxyProtocol: true}, Deps{})
	for _, tt := range tests {
		for _, req := range requests {
			t.Run(tt.name+"/"+req.name, func(t *testing.T) {
				cfg := n.pki.client.Clone()
				cfg.MinVersion, cfg.MaxVersion = tt.version, tt.version
				if tt.resume {
					cfg.ClientSessionCache = tls.NewLRUClientSessionCache(4)
					c := &rawClient{t: t, nc: tls.Client(n.dialCorked(t), cfg)}
					if _, env := c.call(wire.CmdHeartbeat, struct{}{}); env.Code != wire.CodeOK { // stores the ticket
						t.Fatalf("first connection: code %d", env.Code)
					}
				}
				var wg sync.WaitGroup
				for i := range connections {
					wg.Go(func() {
						cork := n.dialCorked(t)
						tc := tls.Client(cork, cfg)
						if err := tc.HandshakeContext(t.Context()); err != nil {
							t.Errorf("connection %d: handshake: %v", i, err)
							return
						}
						if tt.resume && !tc.ConnectionState().DidResume {
							t.Errorf("connection %d: session not resumed", i)
						}
						if !tt.coalesce {
							if err := cork.Flush(); err != nil {
								t.Errorf("connection %d: %v", i, err)
								return
							}
						}
						first, err := frameOf(req.cmd, 1, req.body, 0)
						if err == nil {
							_, err = tc.Write(first)
						}
						if err != nil {
							t.Errorf("connection %d: write: %v", i, err)
							return
						}
						c := &rawClient{t: t, nc: tc}
						f, err := c.next(10 * time.Second) // flushes first
						if err != nil {
							t.Errorf("connection %d: no answer to the first frame: %v", i, err)
							return
						}
						var env wire.Envelope
						if err := json.Unmarshal(f.Body, &env); err != nil || f.SequenceID != 1 || env.Code != req.wantCode {
							t.Errorf("connection %d: answer seq %d code %d (%v), want seq 1 code %d", i, f.SequenceID, env.Code, err, req.wantCode)
						}
					})
				}
				wg.Wait()
			})
		}
	}
}

// pipeliner is one authenticated native-TLS client that sends requests without waiting for
// answers, acknowledges every MESSAGE push from its reader and checks that every request
// gets exactly its answer.
type pipeliner struct {
	t     testing.TB
	tc    *tls.Conn
	wmu   sync.Mutex // one frame per Write: requests and PUSH_ACKs interleave whole
	seq   uint32
	calls map[uint32]uint16 // sequence id -> the response command it waits for

	mu       sync.Mutex
	answered map[uint32]bool
	pushes   int
	failed   error
	done     chan struct{}
}

func newPipeliner(t testing.TB, n *nativeTLS, cfg *tls.Config, user int64, device uint64) (*pipeliner, error) {
	nc, err := n.dial(t)
	if err != nil {
		return nil, err
	}
	tc := tls.Client(nc, cfg)
	if err := tc.HandshakeContext(t.Context()); err != nil {
		return nil, fmt.Errorf("handshake: %w", err)
	}
	if err := nc.Flush(); err != nil {
		return nil, err
	}
	c := &rawClient{nc: tc}
	auth, err := json.Marshal(wire.AuthRequest{Token: token(user), DeviceID: device})
	if err != nil {
		return nil, err
	}
	f, err := frame.Append(nil, wire.CmdAuth, 1, 1, auth, 0)
	if err != nil {
		return nil, err
	}
	if _, err := tc.Write(f); err != nil {
		return nil, fmt.Errorf("auth: %w", err)
	}
	for { // pushes to the user may come before the answer: the device is bound first
		f, err := c.next(time.Minute)
		if err != nil {
			return nil, fmt.Errorf("auth as %d: %w", user, err)
		}
		if f.Command == wire.ResponseCommand(wire.CmdAuth) && f.SequenceID == 1 {
			var env wire.Envelope
			if err := json.Unmarshal(f.Body, &env); err != nil || env.Code != wire.CodeOK {
				return nil, fmt.Errorf("auth as %d: code %d %v", user, env.Code, err)
			}
			break
		}
	}
	p := &pipeliner{t: t, tc: tc, seq: 1, calls: map[uint32]uint16{}, answered: map[uint32]bool{}, done: make(chan struct{})}
	go p.read(c)
	return p, nil
}

// newPipelines opens count pipeliners, a few handshakes at a time; cfg(i) is connection i's
// client configuration.
func newPipelines(t *testing.T, n *nativeTLS, count int, cfg func(i int) *tls.Config, user int64) []*pipeliner {
	t.Helper()
	conns := make([]*pipeliner, count)
	errs := make([]error, count)
	var wg sync.WaitGroup
	next := make(chan int)
	for range 8 {
		wg.Go(func() {
			for i := range next {
				conns[i], errs[i] = newPipeliner(t, n, cfg(i), user, uint64(1000+i))
			}
		})
	}
	for i := range count {
		next <- i
	}
	close(next)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
	}
	return conns
}

// send queues one request; compressMin > 0 sends its body zlib-compressed.
func (p *pipeliner) send(cmd uint16, body any, compressMin int) {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	p.seq++
	p.mu.Lock()
	p.calls[p.seq] = wire.ResponseCommand(cmd)
	p.mu.Unlock()
	f, err := frameOf(cmd, p.seq, body, compressMin)
	if err == nil {
		_, err = p.tc.Write(f)
	}
	if err != nil {
		p.fail(fmt.Errorf("write request %d: %w", p.seq, err))
	}
}

func (p *pipeliner) fail(err error) {
	p.mu.Lock()
	if p.failed == nil {
		p.failed = err
	}
	p.mu.Unlock()
}

func (p *pipeliner) read(c *rawClient) {
	defer close(p.done)
	for {
		f, err := c.next(time.Hour) // the test's end closes the connection
		if err != nil {
			p.mu.Lock()
			if len(p.answered) < len(p.calls) {
				p.failed = fmt.Errorf("connection ended with %d of %d answers: %w", len(p.answered), len(p.calls), err)
			}
			p.mu.Unlock()
			return
		}
		var env wire.Envelope
		if err := json.Unmarshal(f.Body, &env); err != nil {
			p.fail(fmt.Errorf("frame %d: %w", f.Command, err))
			continue
		}
		if f.Command == wire.CmdMessage {
			p.mu.Lock()
			p.pushes++
			p.mu.Unlock()
			p.wmu.Lock()
			ack, err := frameOf(wire.CmdPushAck, f.SequenceID, struct{}{}, 0)
			if err == nil {
				_, err = p.tc.Write(ack)
			}
			p.wmu.Unlock()
			if err != nil {
				p.fail(fmt.Errorf("PUSH_ACK: %w", err))
			}
			continue
		}
		p.mu.Lock()
		want, ok := p.calls[f.SequenceID]
		switch {
		case !ok || f.Command != want:
			p.failed = fmt.Errorf("answer command %d seq %d matches no request", f.Command, f.SequenceID)
		case p.answered[f.SequenceID]:
			p.failed = fmt.Errorf("seq %d answered twice", f.SequenceID)
		case env.Code != wire.CodeOK:
			p.failed = fmt.Errorf("seq %d: code %d %s", f.SequenceID, env.Code, env.Msg)
		}
		p.answered[f.SequenceID] = true
		p.mu.Unlock()
	}
}

// waitFor returns once want requests were answered, the connection failed or wait passed.
func (p *pipeliner) waitFor(want int, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for {
		p.mu.Lock()
		err, got := p.failed, len(p.answered)
		p.mu.Unlock()
		switch {
		case err != nil:
			return err
		case got >= want:
			return nil
		case time.Now().After(deadline):
			return fmt.Errorf("%d of %d requests answered in %v", got, want, wait)
		}
		select {
		case <-p.done:
			p.mu.Lock()
			defer p.mu.Unlock()
			if p.failed == nil && len(p.answered) < want {
				return fmt.Errorf("connection closed with %d of %d answers", len(p.answered), want)
			}
			return p.failed
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// wait returns once every request was answered (or the connection failed) and wait passed.
func (p *pipeliner) wait(wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		p.mu.Lock()
		err, complete := p.failed, len(p.answered) == len(p.calls)
		p.mu.Unlock()
		if err != nil {
			return err
		}
		if complete {
			return nil
		}
		select {
		case <-p.done:
			p.mu.Lock()
			defer p.mu.Unlock()
			return p.failed
		case <-time.After(5 * time.Millisecond):
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return fmt.Errorf("%d of %d requests answered in %v", len(p.answered), len(p.calls), wait)
}

func (p *pipeliner) answeredCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.answered)
}

func (p *pipeliner) pushCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pushes
}

// Many requests in flight on one connection, answered by workers in any order, interleaved
// with pushes to the same connection, zlib-compressed bodies both ways and PUSH_ACKs, never
// break the TLS stream: every request is answered once and every push arrives.
func TestTLSPipelinedRequestsWithPushes(t *testing.T) {
	const (
		clients  = 8
		requests = 200
		pushes   = 100
	)
	st := newStack(t)
	n := startNative(t, Config{ProxyProtocol: true, CompressMin: 64, Multicore: true, PushAckTimeout: time.Minute}, st.deps)
	long := strings.Repeat("compressed both ways over native TLS ", 20)
	var (
		wg        sync.WaitGroup
		delivered atomic.Int64
		conns     []*pipeliner
	)
	conns = newPipelines(t, n, clients, func(int) *tls.Config { return n.pki.client }, 1)
	for i, p := range conns {
		wg.Go(func() {
			var pushing sync.WaitGroup
			pushing.Go(func() { // pushes race the answers on the same connection
				target := delivery.Target{Recipients: []int64{1}, Sender: 2}
				// Each pusher its own topic: the same (topic, seq) twice is one message, which a
				// connection takes once.
				for k := range pushes {
					m := testMessage(int64(k+1), long)
					m.Topic = fmt.Sprintf("grp_%d", i+1)
					push := delivery.Push{Kind: delivery.KindMessage, Message: m}
					delivered.Add(int64(n.h.srv.Push(t.Context(), "default", target, push).Delivered))
				}
			})
			for k := range requests {
				switch k % 4 {
				case 0:
					p.send(wire.CmdHeartbeat, struct{}{}, 0)
				case 1:
					p.send(wire.CmdSendMessage, wire.SendMessageRequest{ToUser: 2, ClientMsgID: fmt.Sprintf("c%d-%d", i, k), Type: "text", Content: text(long)}, 64)
				default:
					p.send(wire.CmdSendMessage, wire.SendMessageRequest{ToUser: 2, ClientMsgID: fmt.Sprintf("c%d-%d", i, k), Type: "text", Content: text("short")}, 0)
				}
			}
			pushing.Wait()
			if err := p.wait(time.Minute); err != nil {
				t.Errorf("client %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	eventuallyWithin(t, 30*time.Second, "every delivered push to arrive", func() bool {
		got := 0
		for _, p := range conns {
			got += p.pushCount()
		}
		return int64(got) == delivered.Load()
	})
	if rec := n.h.logs.find("tcp request", "code", "50301"); rec != nil {
		t.Errorf("a request failed on the server: %v", rec)
	}
	if rec := n.h.logs.first(func(r map[string]string) bool { return strings.Contains(r["err"], "tls") }); rec != nil {
		t.Errorf("TLS error logged: %v", rec)
	}
}

// soakDuration is how long TestTLSSoak keeps its connections sending: short in a plain
// `go test`, IMD_TLS_SOAK (e.g. 1m) for the long run.
func soakDuration(t *testing.T) time.Duration {
	v := os.Getenv("IMD_TLS_SOAK")
	if v == "" {
		return 3 * time.Second
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		t.Fatalf("IMD_TLS_SOAK=%q: %v", v, err)
	}
	return d
}

// appendIndex keeps the soak's messages itself: the memory store checks a new msg_id against
// every row of the month, which at tens of thousands of rows turns a soak of the transport
// into one of that scan. Appends are indexed by (topic, seq) and dedup key; reads go to the
// memory store, which the soak does not use.
type appendIndex struct {
	ports.MessageStore
	mu    sync.Mutex
	seqs  map[string]map[int64]bool // topic -> seqs taken
	dedup map[string]bool           // topic/from/client_msg_id
}

func (a *appendIndex) Append(_ context.Context, _ string, m message.Message, _ string) (ports.AppendResult, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.seqs[m.Topic][m.Seq] {
		return ports.AppendResult{}, fmt.Errorf("%w: %s seq %d", seq.ErrTaken, m.Topic, m.Seq)
	}
	if a.seqs[m.Topic] == nil {
		a.seqs[m.Topic] = map[int64]bool{}
	}
	a.seqs[m.Topic][m.Seq] = true
	key := fmt.Sprintf("%s/%d/%s", m.Topic, m.From, m.ClientMsgID)
	if a.dedup[key] {
		return ports.AppendResult{}, fmt.Errorf("soak: client_msg_id %s sent twice", m.ClientMsgID)
	}
	a.dedup[key] = true
	return ports.AppendResult{Outcome: ports.Stored}, nil
}

// Soak: 500 native-TLS connections, TLS 1.2 and 1.3, each keeping a window of requests in
// flight for the whole run. No connection breaks and every request gets its own answer.
func TestTLSSoak(t *testing.T) {
	const (
		connections = 500
		window      = 16
	)
	duration := soakDuration(t)
	st := newStack(t, func(s ports.MessageStore) ports.MessageStore {
		return &appendIndex{MessageStore: s, seqs: map[string]map[int64]bool{}, dedup: map[string]bool{}}
	})
	n := startNative(t, Config{ProxyProtocol: true, CompressMin: 64, Multicore: true, Queue: connections * window,
		IdleTimeout: time.Hour, RequestTimeout: time.Minute}, st.deps)
	conns := newPipelines(t, n, connections, func(i int) *tls.Config {
		cfg := n.pki.client.Clone()
		if i%2 == 1 {
			cfg.MaxVersion = tls.VersionTLS12
		}
		return cfg
	}, 1)
	long := strings.Repeat("soak ", 40)
	stop := time.Now().Add(duration)
	var (
		wg   sync.WaitGroup
		sent atomic.Int64
	)
	for i, p := range conns {
		wg.Go(func() {
			for round := 0; time.Now().Before(stop); round++ {
				for k := range window {
					body := wire.SendMessageRequest{ToUser: 2, ClientMsgID: fmt.Sprintf("s%d-%d-%d", i, round, k), Type: "text", Content: text(long)}
					p.send(wire.CmdSendMessage, body, 64*(k%2))
				}
				sent.Add(window)
				want := (round + 1) * window
				if err := p.waitFor(want, time.Minute); err != nil {
					t.Errorf("connection %d (round %d): %v", i, round, err)
					return
				}
			}
		})
	}
	wg.Wait()
	t.Logf("%d connections, %v: %d requests answered", connections, duration, sent.Load())
	if rec := n.h.logs.first(func(r map[string]string) bool { return strings.Contains(r["err"], "tls") }); rec != nil {
		t.Errorf("TLS error logged: %v", rec)
	}
	if got := n.proxy.Connections(); got != connections {
		t.Errorf("%d connections relayed, want %d", got, connections)
	}
}
