package server

import (
	"context"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/protocol/session"
	"github.com/imdhq/imd/clients/go/frame"
	"github.com/imdhq/imd/clients/go/proxyheader"
	"github.com/imdhq/imd/clients/go/wire"
	"github.com/imdhq/imd/core/domain/delivery"
	"github.com/imdhq/imd/core/domain/message"
)

// expectKick reads frames until a KICK and checks its reason, then expects the close.
func (c *rawClient) expectKick(reason string) {
	c.t.Helper()
	for {
		f := c.read()
		if f.Command != wire.CmdKick {
			continue // a response or push sent before the KICK
		}
		var k wire.Kick
		decodeData(c.t, envelope(c.t, f), &k)
		if k.Reason != reason {
			c.t.Fatalf("KICK reason %q, want %q", k.Reason, reason)
		}
		c.expectClosed()
		return
	}
}

func TestStopKicksClients(t *testing.T) {
	listenerModes(t, func(t *testing.T, start func(*testing.T, Config, Deps) *harness) {
		h := start(t, Config{}, Deps{})
		authed, anonymous := h.dial(t), h.dial(t)
		authed.auth(1, 1)
		if _, env := anonymous.call(wire.CmdHeartbeat, struct{}{}); env.Code != wire.CodeOK {
			t.Fatalf("heartbeat code %d", env.Code)
		}
		stopped := make(chan error, 1)
		go func() { stopped <- h.srv.Stop(context.WithoutCancel(t.Context())) }()
		authed.expectKick(kickReasonShutdown)
		anonymous.expectKick(kickReasonShutdown)
		select {
		case err := <-stopped:
			if err != nil {
				t.Fatalf("stop: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("Stop did not return")
		}
	})
}

// Drain tells the connections to reconnect a few at a time over its window and serves the ones
// not yet told meanwhile; Stop's last pass tells whoever the drain left (its context ended).
func TestDrainKicksAFewWhileServingTheRest(t *testing.T) {
	listenerModes(t, func(t *testing.T, start func(*testing.T, Config, Deps) *harness) {
		h := start(t, Config{}, Deps{})
		conns := make([]*rawClient, 4)
		for i := range conns {
			conns[i] = h.dial(t)
			conns[i].auth(int64(i+1), 1)
		}
		ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
		drained := make(chan struct{})
		// Four connections over a minute: the first is told at once, the next 15 s later.
		go func() { h.srv.Drain(ctx, time.Minute); close(drained) }()
		first := -1
		eventuallyWithin(t, 10*time.Second, "a first connection told", func() bool {
			for i, c := range conns {
				if f, err := c.next(10 * time.Millisecond); err == nil {
					var k wire.Kick
					decodeData(t, envelope(t, f), &k)
					if f.Command != wire.CmdKick || k.Reason != kickReasonShutdown {
						t.Fatalf("connection %d got command %d %+v, want KICK shutdown", i, f.Command, k)
					}
					c.expectClosed()
					first = i
					return true
				}
			}
			return false
		})
		for i, c := range conns {
			if i == first {
				continue
			}
			if f, env := c.call(wire.CmdHeartbeat, struct{}{}); f.Command != wire.CmdHeartbeat || env.Code != wire.CodeOK {
				t.Fatalf("connection %d not served while the drain ran: command %d code %d", i, f.Command, env.Code)
			}
		}
		cancel()
		<-drained
		stopped := make(chan error, 1)
		go func() { stopped <- h.srv.Stop(context.WithoutCancel(t.Context())) }()
		for i, c := range conns {
			if i != first {
				c.expectKick(kickReasonShutdown)
			}
		}
		if err := <-stopped; err != nil {
			t.Fatalf("stop: %v", err)
		}
	})
}

// A connection that never got to frames is closed without a KICK it could not parse.
func TestStopClosesConnectionsBeforeFrames(t *testing.T) {
	h := start(t, Config{ProxyProtocol: true, ProxyTimeout: time.Minute}, Deps{})
	ready, waiting := h.dial(t), h.dial(t)
	ready.write(proxyheader.AppendV2(nil, netip.MustParseAddrPort("192.0.2.4:1"), netip.MustParseAddrPort("127.0.0.1:9000")))
	ready.auth(1, 1)
	waiting.write([]byte("PROXY TCP4 "))
	eventually(t, "both connections open", func() bool { return h.metrics.gauge("tcp_connections") == 2 })

	if err := h.srv.Stop(context.WithoutCancel(t.Context())); err != nil {
		t.Fatalf("stop: %v", err)
	}
	ready.expectKick(kickReasonShutdown)
	if f, err := waiting.next(3 * time.Second); err == nil {
		t.Fatalf("connection without PROXY header got frame %+v", f.Header)
	}
}

// unackedRecorder collects what the server gives up.
type unackedRecorder struct {
	mu  sync.Mutex
	got []session.Unacked
}

func (r *unackedRecorder) record(u session.Unacked) {
	r.mu.Lock()
	r.got = append(r.got, u)
	r.mu.Unlock()
}

func (r *unackedRecorder) seqs(closed bool) []int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []int64
	for _, u := range r.got {
		if u.Closed == closed {
			out = append(out, u.Message.Seq)
		}
	}
	return out
}

// A MESSAGE push without PUSH_ACK is counted and handed to the hook once its timeout passes;
// the connection stays open. Pushes still outstanding when the connection closes go to the
// hook too.
func TestPushAckTimeout(t *testing.T) {
	listenerModes(t, func(t *testing.T, start func(*testing.T, Config, Deps) *harness) {
		h := start(t, Config{PushAckTimeout: 200 * time.Millisecond}, Deps{})
		var rec unackedRecorder
		h.srv.commands.Sessions().OnUnacked(rec.record)
		c := h.dial(t)
		c.auth(1, 1)
		push := func(seq int64) uint32 {
			rep := h.srv.Push(t.Context(), "default", delivery.Target{Recipients: []int64{1}},
				delivery.Push{Kind: delivery.KindMessage, Message: testMessage(seq, "hi")})
			if rep.Delivered != 1 {
				t.Fatalf("push %d: %+v", seq, rep)
			}
			pushSeq, m := readPush(t, c)
			if m.Seq != seq {
				t.Fatalf("pushed seq %d, want %d", m.Seq, seq)
			}
			return pushSeq
		}
		push(1) // never acknowledged
		acked := push(2)
		ack, err := frame.Append(nil, wire.CmdPushAck, 0, acked, []byte(`{}`), 0)
		if err != nil {
			t.Fatal(err)
		}
		c.write(ack)
		// The connection's frames are handled in order: once the heartbeat is answered, the
		// ack is in.
		if _, env := c.call(wire.CmdHeartbeat, struct{}{}); env.Code != wire.CodeOK {
			t.Fatal("heartbeat after the ack")
		}
		// The barrier: a push after the acknowledged one, never acknowledged. Its timeout comes
		// after the acknowledged one's, so once it is handed over the other's has passed too.
		push(3)

		eventually(t, "the push after the acknowledged one to time out", func() bool { return slices.Contains(rec.seqs(false), 3) })
		if got := rec.seqs(false); !slices.Equal(got, []int64{1, 3}) {
			t.Fatalf("timed out %v, want [1 3]: the acknowledged push 2 must never time out", got)
		}
		if got := h.metrics.count("push_ack_timeout_total"); got != 2 {
			t.Fatalf("push_ack_timeout_total %v, want 2", got)
		}
		if _, env := c.call(wire.CmdHeartbeat, struct{}{}); env.Code != wire.CodeOK {
			t.Fatal("connection unusable after an ack timeout")
		}

		push(4)
		_ = c.nc.Close()
		eventually(t, "the outstanding push handed over at close", func() bool { return slices.Equal(rec.seqs(true), []int64{4}) })
		if got := h.metrics.count("push_ack_timeout_total"); got != 2 {
			t.Fatalf("push_ack_timeout_total %v after close, want still 2", got)
		}
	})
}

// missedRecorder is a Deps.Missed that hands each push over.
type missedRecorder chan session.Unacked

func (m missedRecorder) Record(tenant string, user int64, device uint64, msg message.Message) {
	m <- session.Unacked{Identity: session.Identity{Tenant: tenant, User: user, Device: device}, Message: &msg}
}

// Deps.Missed gets the MESSAGE pushes a device never acknowledged, to become mailbox rows.
func TestUnackedPushesGoToMissed(t *testing.T) {
	listenerModes(t, func(t *testing.T, start func(*testing.T, Config, Deps) *harness) {
		missed := make(missedRecorder, 1)
		h := start(t, Config{PushAckTimeout: 100 * time.Millisecond}, Deps{Missed: missed})
		c := h.dial(t)
		c.auth(1, 7)
		if rep := h.srv.Push(t.Context(), "default", delivery.Target{Recipients: []int64{1}},
			delivery.Push{Kind: delivery.KindMessage, Message: testMessage(5, "hi")}); rep.Delivered != 1 {
			t.Fatalf("push: %+v", rep)
		}
		readPush(t, c) // never acknowledged
		select {
		case u := <-missed:
			if u.Tenant != "default" || u.User != 1 || u.Device != 7 || u.Message.Seq != 5 {
				t.Fatalf("missed %+v seq %d, want default/1/7 seq 5", u.Identity, u.Message.Seq)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the unacknowledged push never reached Deps.Missed")
		}
	})
}
