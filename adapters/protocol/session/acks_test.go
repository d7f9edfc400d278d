package session

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/imdhq/imd/core/domain/delivery"
)

// unackedLog records what a registry gives up.
type unackedLog struct {
	mu  sync.Mutex
	got []Unacked
}

func (l *unackedLog) add(u Unacked) {
	l.mu.Lock()
	l.got = append(l.got, u)
	l.mu.Unlock()
}

// seqs lists the message seqs given up, with closed ones negated.
func (l *unackedLog) seqs() []int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []int64
	for _, u := range l.got {
		if u.Closed {
			out = append(out, -u.Message.Seq)
		} else {
			out = append(out, u.Message.Seq)
		}
	}
	return out
}

func TestPushAcks(t *testing.T) {
	id := Identity{"t", 1, 1}
	target := delivery.Target{Recipients: []int64{1}}
	tests := []struct {
		name   string
		window int
		// pushes of messages 1..pushes, then the acks by push sequence id, then what happens
		pushes int
		acks   []uint32
		then   func(fx *fixture, c *Conn)
		// want: message seqs given up (negative: because the connection closed)
		want        []int64
		wantTimeout int
	}{
		{
			name: "acked pushes are never reported", window: 10, pushes: 3, acks: []uint32{1, 2, 3},
			then: func(fx *fixture, _ *Conn) { fx.reg.ExpireAcks(time.Now().Add(time.Hour)) },
		},
		{
			name: "overdue pushes time out once", window: 10, pushes: 3, acks: []uint32{2},
			then: func(fx *fixture, _ *Conn) {
				fx.reg.ExpireAcks(time.Now().Add(time.Hour))
				fx.reg.ExpireAcks(time.Now().Add(2 * time.Hour))
			},
			want: []int64{1, 3}, wantTimeout: 2,
		},
		{
			name: "nothing is due before the timeout", window: 10, pushes: 2,
			then: func(fx *fixture, _ *Conn) { fx.reg.ExpireAcks(time.Now()) },
		},
		{
			name: "a full window gives up the oldest", window: 2, pushes: 4, acks: []uint32{4},
			want: []int64{1, 2}, wantTimeout: 2,
		},
		{
			name: "closing gives up what is outstanding, without counting a timeout", window: 10, pushes: 3, acks: []uint32{1},
			then: func(fx *fixture, c *Conn) { fx.reg.Unbind(c) },
			want: []int64{-2, -3},
		},
		{
			name: "out-of-order and repeated acks", window: 10, pushes: 3, acks: []uint32{3, 1, 3, 2, 9},
			then: func(fx *fixture, _ *Conn) { fx.reg.ExpireAcks(time.Now().Add(time.Hour)) },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fx := newFixtureWith(Options{AckTimeout: time.Minute, AckWindow: tt.window})
			var log unackedLog
			fx.reg.OnUnacked(log.add)
			c, fc := fx.bind(t, roomy, id)
			for i := 1; i <= tt.pushes; i++ {
				if rep := fx.reg.Push(t.Context(), "t", target, msgPush(int64(i))); rep.Delivered != 1 {
					t.Fatalf("push %d: %+v", i, rep)
				}
			}
			for _, seq := range tt.acks {
				c.Ack(seq)
			}
			if tt.then != nil {
				tt.then(fx, c)
			}
			if got := log.seqs(); !slices.Equal(got, tt.want) {
				t.Fatalf("given up %v, want %v", got, tt.want)
			}
			if got := fx.metrics.get("push_ack_timeout_total"); got != tt.wantTimeout {
				t.Fatalf("push_ack_timeout_total %d, want %d", got, tt.wantTimeout)
			}
			if fc.isClosed() {
				t.Fatal("an unacknowledged push closed the connection")
			}
		})
	}
}

func TestDroppedPushIsNotAlsoATimeout(t *testing.T) {
	fx := newFixture()
	var log unackedLog
	fx.reg.OnUnacked(log.add)
	c, _ := fx.bind(t, Limits{Bytes: 1 << 20, Frames: 1}, Identity{"t", 1, 1})
	target := delivery.Target{Recipients: []int64{1}}
	fx.reg.Push(t.Context(), "t", target, msgPush(1))
	if rep := fx.reg.Push(t.Context(), "t", target, msgPush(2)); rep.Failed != 1 {
		t.Fatalf("push over the limit: %+v", rep)
	}
	c.Ack(1)
	fx.reg.ExpireAcks(time.Now().Add(time.Hour))
	if got := log.seqs(); len(got) != 0 {
		t.Fatalf("given up %v; the dropped push was already reported as failed", got)
	}
}

func TestOtherPushesAreNotTracked(t *testing.T) {
	fx := newFixture()
	var log unackedLog
	fx.reg.OnUnacked(log.add)
	fx.bind(t, roomy, Identity{"t", 1, 1})
	fx.reg.Push(t.Context(), "t", delivery.Target{Recipients: []int64{1}}, delivery.Push{Kind: delivery.KindEvent, Data: []byte(`{}`)})
	fx.reg.ExpireAcks(time.Now().Add(time.Hour))
	if got := log.seqs(); len(got) != 0 {
		t.Fatalf("an EVENT push waited for PUSH_ACK: %v", got)
	}
}

func TestAckQueueReclaimsMemory(t *testing.T) {
	var a acks
	next := uint32(0)
	seq := func() uint32 { next++; return next }
	due := time.Now().Add(time.Minute)
	for range 1000 {
		s, _ := a.track(seq, nil, due, 2000)
		if _, ok := a.ack(s); !ok {
			t.Fatalf("ack %d not found", s)
		}
	}
	if len(a.pending) != 0 || a.head != 0 {
		t.Fatalf("settled queue keeps len %d head %d", len(a.pending), a.head)
	}
	for range 1000 {
		a.track(seq, nil, due, 2000)
	}
	for i := range uint32(999) {
		a.ack(next - 998 + i) // the oldest stays outstanding
	}
	if live := len(a.pending) - a.head; live != 1000 {
		t.Fatalf("%d entries, want the oldest blocking the 999 settled after it", live)
	}
	a.ack(next - 999)
	if len(a.pending) != 0 || cap(a.pending) > keptAckCapacity {
		t.Fatalf("drained queue keeps cap %d", cap(a.pending))
	}
}
