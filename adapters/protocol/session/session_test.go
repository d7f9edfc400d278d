package session

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/imdhq/imd/clients/go/frame"
	"github.com/imdhq/imd/clients/go/wire"
	"github.com/imdhq/imd/core/domain/delivery"
	"github.com/imdhq/imd/core/domain/message"
)

// fakeConn stands in for a transport whose event loop runs only when the test says so:
// writes wait in pending until loop() runs their callbacks.
type fakeConn struct {
	mu       sync.Mutex
	written  []byte
	pending  []func()
	outbound int
	closed   bool
	wakes    int
	ev       *fakeLoop // nil: no event loop
}

func (f *fakeConn) Loop() Loop {
	if f.ev == nil {
		return nil
	}
	return f.ev
}

func (f *fakeConn) Write(bs [][]byte, done func(int, error)) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, b := range bs {
		f.written = append(f.written, b...)
	}
	f.ev.record("write")
	f.pending = append(f.pending, func() { done(f.OutboundBuffered(), nil) })
	return nil
}

func (f *fakeConn) Wake(done func()) error {
	f.mu.Lock()
	f.wakes++
	f.pending = append(f.pending, done)
	f.mu.Unlock()
	return nil
}

func (f *fakeConn) Close() error {
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
	return nil
}

func (f *fakeConn) OutboundBuffered() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.outbound
}

// loop runs the queued callbacks, as the event loop would.
func (f *fakeConn) loop() {
	f.mu.Lock()
	pending := f.pending
	f.pending = nil
	f.mu.Unlock()
	for _, run := range pending {
		run()
	}
}

// frames decodes everything written so far.
func (f *fakeConn) frames(t *testing.T) []frame.Frame {
	t.Helper()
	f.mu.Lock()
	buf := slices.Clone(f.written)
	f.mu.Unlock()
	var out []frame.Frame
	for len(buf) > 0 {
		fr, n, err := frame.Decode(buf)
		if err != nil {
			t.Fatalf("decode written frames: %v", err)
		}
		out = append(out, fr)
		buf = buf[n:]
	}
	return out
}

func (f *fakeConn) isClosed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.closed
}

type counter struct {
	mu     sync.Mutex
	counts map[string]int
}

func (c *counter) Inc(name string, _ ...string) {
	c.mu.Lock()
	c.counts[name]++
	c.mu.Unlock()
}
func (c *counter) Add(name string, n float64, _ ...string) {
	c.mu.Lock()
	c.counts[name] += int(n)
	c.mu.Unlock()
}
func (c *counter) Observe(string, float64, ...string) {}
func (c *counter) Set(string, float64, ...string)     {}

func (c *counter) get(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts[name]
}

type fixture struct {
	reg     *Registry
	metrics *counter
	nextID  uint64
}

func newFixture() *fixture {
	return newFixtureWith(Options{AckTimeout: time.Minute, AckWindow: 100})
}

func newFixtureWith(opts Options) *fixture {
	m := &counter{counts: map[string]int{}}
	return &fixture{reg: NewRegistry(opts, m, slog.New(slog.NewTextHandler(io.Discard, nil))), metrics: m}
}

func (fx *fixture) bind(t *testing.T, limits Limits, id Identity) (*Conn, *fakeConn) {
	t.Helper()
	fc := &fakeConn{}
	fx.nextID++
	c := NewConn(fx.nextID, fc, limits, fx.metrics)
	if fx.reg.Bind(c, id) {
		t.Fatalf("bind %+v replaced a connection", id)
	}
	return c, fc
}

var roomy = Limits{Bytes: 1 << 20, Frames: 100}

func msgPush(seq int64) delivery.Push {
	return delivery.Push{Kind: delivery.KindMessage, Message: &message.Message{
		Topic: "grp_1", Seq: seq, MsgID: seq, Type: "text", Content: json.RawMessage(`{"text":"hi"}`), Status: message.StatusNormal,
	}}
}

func TestPushTargets(t *testing.T) {
	fx := newFixture()
	_, senderPhone := fx.bind(t, roomy, Identity{"t", 1, 1})
	_, senderDesk := fx.bind(t, roomy, Identity{"t", 1, 2})
	_, peer := fx.bind(t, roomy, Identity{"t", 2, 1})
	_, otherTenant := fx.bind(t, roomy, Identity{"u", 2, 1})

	tests := []struct {
		name   string
		target delivery.Target
		want   delivery.Report
		frames map[*fakeConn]int
	}{
		{"sending device excluded", delivery.Target{Recipients: []int64{1, 2}, Sender: 1, ExcludeDevice: 1},
			delivery.Report{Delivered: 2}, map[*fakeConn]int{senderDesk: 1, peer: 1}},
		{"offline recipient", delivery.Target{Recipients: []int64{2, 3}},
			delivery.Report{Delivered: 1, Offline: 1}, map[*fakeConn]int{senderDesk: 1, peer: 2}},
		{"sender with no other device", delivery.Target{Recipients: []int64{2}, Sender: 2, ExcludeDevice: 1},
			delivery.Report{}, map[*fakeConn]int{peer: 2}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if rep := fx.reg.Push(t.Context(), "t", tt.target, msgPush(int64(i))); rep != tt.want {
				t.Fatalf("report %+v, want %+v", rep, tt.want)
			}
			for fc, n := range tt.frames {
				if got := len(fc.frames(t)); got != n {
					t.Fatalf("connection has %d frames, want %d", got, n)
				}
			}
		})
	}
	if len(senderPhone.frames(t)) != 0 || len(otherTenant.frames(t)) != 0 {
		t.Fatal("excluded device or other tenant received a push")
	}
}

// TestLivePushesOnlyToSubscribers: PRESENCE, TYPING_NOTICE and RECEIPT reach a connection only when
// its AUTH subscribed to them; MESSAGE, READ and EVENT reach every connection (DESIGN §13).
func TestLivePushesOnlyToSubscribers(t *testing.T) {
	fx := newFixture()
	plain := NewConn(1, &fakeConn{}, roomy, fx.metrics)
	both := NewConn(2, &fakeConn{}, roomy, fx.metrics)
	typingOnly := NewConn(3, &fakeConn{}, roomy, fx.metrics)
	if got := both.Subscribe([]string{"presence", "stories", "typing", "presence", "message"}); !slices.Equal(got, []string{"presence", "typing"}) {
		t.Fatalf("subscribed %v, want the known live kinds once each, in order", got)
	}
	typingOnly.Subscribe([]string{"typing"})
	for i, c := range []*Conn{plain, both, typingOnly} {
		fx.reg.Bind(c, Identity{"t", int64(i + 1), 1})
	}
	live := func(k delivery.Kind) delivery.Push { return delivery.Push{Kind: k, Data: json.RawMessage(`{}`)} }
	all := delivery.Target{Recipients: []int64{1, 2, 3}}
	tests := []struct {
		push delivery.Push
		want delivery.Report
		cmd  uint16
		gets []*Conn
	}{
		{msgPush(1), delivery.Report{Delivered: 3}, wire.CmdMessage, []*Conn{plain, both, typingOnly}},
		{live(delivery.KindEvent), delivery.Report{Delivered: 3}, wire.CmdEvent, []*Conn{plain, both, typingOnly}},
		{live(delivery.KindPresence), delivery.Report{Delivered: 1}, wire.CmdPresence, []*Conn{both}},
		{live(delivery.KindTyping), delivery.Report{Delivered: 2}, wire.CmdTypingNotice, []*Conn{both, typingOnly}},
		{live(delivery.KindReceipt), delivery.Report{}, wire.CmdReceipt, nil},
	}
	for _, tt := range tests {
		t.Run(string(tt.push.Kind), func(t *testing.T) {
			before := map[*Conn]int{}
			for _, c := range []*Conn{plain, both, typingOnly} {
				before[c] = len(c.link.(*fakeConn).frames(t))
			}
			if rep := fx.reg.Push(t.Context(), "t", all, tt.push); rep != tt.want {
				t.Fatalf("report %+v, want %+v", rep, tt.want)
			}
			for _, c := range []*Conn{plain, both, typingOnly} {
				fs := c.link.(*fakeConn).frames(t)
				got := len(fs) - before[c]
				if want := btoi(slices.Contains(tt.gets, c)); got != want {
					t.Fatalf("connection %d got %d frames, want %d", c.ID(), got, want)
				}
				if got == 1 && fs[len(fs)-1].Command != tt.cmd {
					t.Fatalf("connection %d got command %d, want %d", c.ID(), fs[len(fs)-1].Command, tt.cmd)
				}
			}
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestPushSequencePerConnection(t *testing.T) {
	fx := newFixture()
	_, a := fx.bind(t, roomy, Identity{"t", 1, 1})
	_, b := fx.bind(t, roomy, Identity{"t", 2, 1})
	fx.reg.Push(t.Context(), "t", delivery.Target{Recipients: []int64{1}}, msgPush(1))
	fx.reg.Push(t.Context(), "t", delivery.Target{Recipients: []int64{1, 2}}, msgPush(2))

	for fc, want := range map[*fakeConn][]uint32{a: {1, 2}, b: {1}} {
		var seqs []uint32
		for _, f := range fc.frames(t) {
			if f.Command != wire.CmdMessage || f.RequestID != 0 {
				t.Fatalf("push header %+v", f.Header)
			}
			seqs = append(seqs, f.SequenceID)
		}
		if !slices.Equal(seqs, want) {
			t.Fatalf("sequence ids %v, want %v", seqs, want)
		}
	}
	// The shared body is the same message for everyone.
	fa, fb := a.frames(t)[1], b.frames(t)[0]
	if string(fa.Body) != string(fb.Body) {
		t.Fatalf("bodies differ:\n%s\n%s", fa.Body, fb.Body)
	}
}

func TestOutboundLimits(t *testing.T) {
	tests := []struct {
		name   string
		limits Limits
		// queue frames without running the loop, then set the transport's unsent bytes
		before   int
		buffered int
	}{
		{"frames waiting for the loop", Limits{Bytes: 1 << 20, Frames: 2}, 2, 0},
		{"bytes in the transport's buffer", Limits{Bytes: 4096, Frames: 100}, 0, 4096},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fx := newFixture()
			c, fc := fx.bind(t, tt.limits, Identity{"t", 1, 1})
			target := delivery.Target{Recipients: []int64{1}}
			for i := range tt.before {
				if rep := fx.reg.Push(t.Context(), "t", target, msgPush(int64(i))); rep.Delivered != 1 {
					t.Fatalf("push %d under the limit: %+v", i, rep)
				}
			}
			c.Observe(tt.buffered)
			for range 3 {
				if rep := fx.reg.Push(t.Context(), "t", target, msgPush(9)); rep != (delivery.Report{Failed: 1}) {
					t.Fatalf("push over the limit: %+v", rep)
				}
			}
			if got := fx.metrics.get("outbound_drop_total"); got != 3 {
				t.Fatalf("outbound_drop_total %d, want 3", got)
			}
			if fc.wakes != 1 {
				t.Fatalf("%d wakes, want one refresh for all drops", fc.wakes)
			}
			// The loop writes the queue and its traffic handler sees the transport's buffer drained.
			fc.loop()
			c.Observe(0)
			if rep := fx.reg.Push(t.Context(), "t", target, msgPush(10)); rep.Delivered != 1 {
				t.Fatalf("push after draining: %+v", rep)
			}
			if fc.isClosed() {
				t.Fatal("drops closed the connection")
			}
		})
	}
}

func TestResponsesIgnoreLimits(t *testing.T) {
	fx := newFixture()
	c, fc := fx.bind(t, Limits{Bytes: 1, Frames: 1}, Identity{"t", 1, 1})
	for range 3 {
		f, err := frame.Append(nil, wire.CmdHeartbeat, 1, 1, []byte(`{}`), 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Send(f); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(fc.frames(t)); n != 3 {
		t.Fatalf("%d responses written, want 3", n)
	}
}

// TestPushesHeldUntilTheAuthAnswer: a device bound by AUTH before its answer is queued reads
// the answer first; the pushes that found it bound meanwhile follow in order, and later pushes
// go straight through.
func TestPushesHeldUntilTheAuthAnswer(t *testing.T) {
	fx := newFixture()
	fc := &fakeConn{}
	c := NewConn(1, fc, roomy, fx.metrics)
	c.HoldPushes()
	fx.reg.Bind(c, Identity{"t", 1, 1})
	to := delivery.Target{Recipients: []int64{1}}
	for seq := range int64(3) {
		if rep := fx.reg.Push(t.Context(), "t", to, msgPush(seq+1)); rep.Delivered != 1 {
			t.Fatalf("held push %d: %+v, want it taken", seq+1, rep)
		}
	}
	if n := len(fc.frames(t)); n != 0 {
		t.Fatalf("%d frames written while held", n)
	}
	answer, err := frame.Append(nil, wire.ResponseCommand(wire.CmdAuth), 1, 1, []byte(`{}`), 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Send(answer); err != nil {
		t.Fatal(err)
	}
	c.ReleasePushes()
	fx.reg.Push(t.Context(), "t", to, msgPush(4))
	var got []string
	for _, f := range fc.frames(t) {
		var env struct {
			Data struct{ Seq int64 } `json:"data"`
		}
		if f.Command == wire.CmdMessage {
			if err := json.Unmarshal(f.Body, &env); err != nil {
				t.Fatal(err)
			}
		}
		got = append(got, fmt.Sprintf("%d/%d", f.Command, env.Data.Seq))
	}
	want := []string{fmt.Sprintf("%d/0", wire.ResponseCommand(wire.CmdAuth)), "6/1", "6/2", "6/3", "6/4"}
	if !slices.Equal(got, want) {
		t.Fatalf("frames %v, want %v", got, want)
	}
}

func TestBindReplacesAndKicks(t *testing.T) {
	fx := newFixture()
	old, oldFC := fx.bind(t, roomy, Identity{"t", 1, 1})
	_, otherDevice := fx.bind(t, roomy, Identity{"t", 1, 2})
	newer := NewConn(99, &fakeConn{}, roomy, fx.metrics)
	if !fx.reg.Bind(newer, Identity{"t", 1, 1}) {
		t.Fatal("second bind of the device did not replace the first")
	}
	frames := oldFC.frames(t)
	if len(frames) != 1 || frames[0].Command != wire.CmdKick {
		t.Fatalf("replaced connection got %v, want one KICK", frames)
	}
	var env wire.Envelope
	if err := json.Unmarshal(frames[0].Body, &env); err != nil || string(env.Data) != `{"reason":"replaced"}` {
		t.Fatalf("kick body %s (%v)", frames[0].Body, err)
	}
	if oldFC.isClosed() {
		t.Fatal("closed before the KICK left")
	}
	oldFC.loop()
	if !oldFC.isClosed() || !old.Closing() {
		t.Fatal("replaced connection not closed after its KICK")
	}
	if len(otherDevice.frames(t)) != 0 {
		t.Fatal("the user's other device was kicked")
	}

	// The replaced connection's close must not unbind its successor.
	fx.reg.Unbind(old)
	if rep := fx.reg.Push(t.Context(), "t", delivery.Target{Recipients: []int64{1}}, msgPush(1)); rep.Delivered != 2 {
		t.Fatalf("after unbinding the replaced connection: %+v, want 2 devices", rep)
	}
}

func TestKick(t *testing.T) {
	tests := []struct {
		name       string
		device     uint64
		wantKicked int
		wantLeft   int
	}{
		{"one device", 2, 1, 1},
		{"every device", 0, 2, 0},
		{"unknown device", 7, 0, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fx := newFixture()
			fx.bind(t, roomy, Identity{"t", 1, 1})
			fx.bind(t, roomy, Identity{"t", 1, 2})
			if n := fx.reg.Kick("t", 1, tt.device, "bye"); n != tt.wantKicked {
				t.Fatalf("kicked %d, want %d", n, tt.wantKicked)
			}
			rep := fx.reg.Push(t.Context(), "t", delivery.Target{Recipients: []int64{1}}, msgPush(1))
			if rep.Delivered != tt.wantLeft {
				t.Fatalf("push after kick: %+v, want %d delivered", rep, tt.wantLeft)
			}
		})
	}
}

func TestPushRefusals(t *testing.T) {
	tests := []struct {
		name string
		push delivery.Push
		stop bool
	}{
		{"after stop", msgPush(1), true},
		{"unknown kind", delivery.Push{Kind: "bogus"}, false},
		{"message kind without a message", delivery.Push{Kind: delivery.KindMessage}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fx := newFixture()
			_, fc := fx.bind(t, roomy, Identity{"t", 1, 1})
			if tt.stop {
				fx.reg.Stop()
			}
			rep := fx.reg.Push(t.Context(), "t", delivery.Target{Recipients: []int64{1, 2}}, tt.push)
			if rep != (delivery.Report{Failed: 1, Offline: 1}) {
				t.Fatalf("report %+v", rep)
			}
			if len(fc.frames(t)) != 0 {
				t.Fatal("something was written")
			}
		})
	}
}
