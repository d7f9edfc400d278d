package session

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/imdhq/imd/clients/go/wire"
	"github.com/imdhq/imd/core/domain/delivery"
)

func TestPushReachNamesWhoWasNotReached(t *testing.T) {
	fx := newFixture()
	fx.bind(t, roomy, Identity{"t", 1, 1})
	fx.bind(t, roomy, Identity{"t", 1, 2})
	full, _ := fx.bind(t, Limits{Bytes: 1 << 20, Frames: 1}, Identity{"t", 2, 7})
	full.Observe(0)
	// Fill user 2's only device so the next frame is refused.
	fx.reg.Push(t.Context(), "t", delivery.Target{Recipients: []int64{2}}, msgPush(1))

	out := fx.reg.PushReach(t.Context(), "t", delivery.Addressed{Target: delivery.Target{Recipients: []int64{1, 2, 3}, Sender: 1, ExcludeDevice: 1}, Push: msgPush(2)})[0]
	if out.Report != (delivery.Report{Delivered: 1, Failed: 1, Offline: 1}) {
		t.Fatalf("report %+v", out.Report)
	}
	if !slices.Equal(out.FailedDevices, []delivery.Device{{User: 2, Device: 7}}) || !slices.Equal(out.OfflineUsers, []int64{3}) {
		t.Fatalf("failed %v, offline %v; want device 7 of user 2 and user 3", out.FailedDevices, out.OfflineUsers)
	}

	fx.reg.Stop()
	out = fx.reg.PushReach(t.Context(), "t", delivery.Addressed{Target: delivery.Target{Recipients: []int64{1}}, Push: msgPush(3)})[0]
	if len(out.FailedDevices) != 2 {
		t.Fatalf("after Stop: failed %v, want both devices of user 1", out.FailedDevices)
	}
}

func TestPushDevice(t *testing.T) {
	fx := newFixture()
	_, phone := fx.bind(t, roomy, Identity{"t", 1, 1})
	_, desk := fx.bind(t, roomy, Identity{"t", 1, 2})
	event := delivery.Push{Kind: delivery.KindEvent, Data: json.RawMessage(`{"mailbox_seq":3,"type":"kick"}`)}

	if n := fx.reg.PushDevice(t.Context(), "t", 1, 2, event); n != 1 {
		t.Fatalf("one device took %d", n)
	}
	if n := fx.reg.PushDevice(t.Context(), "t", 1, 0, event); n != 2 {
		t.Fatalf("all devices took %d", n)
	}
	if n := fx.reg.PushDevice(t.Context(), "t", 1, 9, event); n != 0 {
		t.Fatalf("an unknown device took %d", n)
	}
	if len(phone.frames(t)) != 1 || len(desk.frames(t)) != 2 {
		t.Fatalf("phone %d frames, desk %d; want 1 and 2", len(phone.frames(t)), len(desk.frames(t)))
	}
	f := desk.frames(t)[0]
	var env wire.Envelope
	if err := json.Unmarshal(f.Body, &env); err != nil || f.Command != wire.CmdEvent || string(env.Data) != `{"mailbox_seq":3,"type":"kick"}` {
		t.Fatalf("EVENT frame %+v %s (%v)", f.Header, f.Body, err)
	}
	fx.reg.Stop()
	if n := fx.reg.PushDevice(t.Context(), "t", 1, 0, event); n != 0 {
		t.Fatalf("after Stop %d devices took it", n)
	}
}

func TestPushReachWritesEachConnectionOnce(t *testing.T) {
	tests := []struct {
		name      string
		limits    Limits
		wantSeqs  []int64 // MESSAGE seqs user 2's connection gets, in order
		wantTaken []int   // Delivered per push
		wantLost  []int   // pushes that name user 2's device as failed
	}{
		{"all frames fit", roomy, []int64{1, 2, 3}, []int{2, 2, 2}, nil},
		{"the frames over the limit are dropped", Limits{Bytes: 1 << 20, Frames: 2}, []int64{1, 2}, []int{2, 2, 1}, []int{2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fx := newFixture()
			_, one := fx.bind(t, roomy, Identity{"t", 1, 1})
			_, two := fx.bind(t, tt.limits, Identity{"t", 2, 1})
			var pushes []delivery.Addressed
			for seq := int64(1); seq <= 3; seq++ {
				pushes = append(pushes, delivery.Addressed{Target: delivery.Target{Recipients: []int64{1, 2, 3}}, Push: msgPush(seq)})
			}
			out := fx.reg.PushReach(t.Context(), "t", pushes...)
			for i, o := range out {
				if o.Delivered != tt.wantTaken[i] || o.Offline != 1 || !slices.Equal(o.OfflineUsers, []int64{3}) {
					t.Fatalf("push %d: %+v; want %d delivered and user 3 offline", i, o, tt.wantTaken[i])
				}
				lost := slices.Contains(o.FailedDevices, delivery.Device{User: 2, Device: 1})
				if lost != slices.Contains(tt.wantLost, i) {
					t.Fatalf("push %d: failed devices %v", i, o.FailedDevices)
				}
			}
			for _, fc := range []*fakeConn{one, two} {
				if writes := len(fc.pending) - fc.wakes; writes != 1 { // a refused frame also wakes the loop
					t.Fatalf("a connection got %d writes; want one for all its frames", writes)
				}
			}
			var seqs []int64
			for i, f := range two.frames(t) {
				var env struct {
					Data wire.Message `json:"data"`
				}
				if err := json.Unmarshal(f.Body, &env); err != nil {
					t.Fatal(err)
				}
				if f.SequenceID != uint32(i+1) {
					t.Fatalf("frame %d has sequence id %d; want %d", i, f.SequenceID, i+1)
				}
				seqs = append(seqs, env.Data.Seq)
			}
			if !slices.Equal(seqs, tt.wantSeqs) {
				t.Fatalf("user 2 got seqs %v; want %v", seqs, tt.wantSeqs)
			}
		})
	}
}

// The messages of one topic in a pass share one member list: each recipient is looked up once
// for all of them, and each push still keeps its own sender's exclusion, report and order.
func TestPushesSharingRecipientsKeepOrderAndExclusions(t *testing.T) {
	fx := newFixture()
	_, phone := fx.bind(t, roomy, Identity{"t", 1, 1})
	_, desk := fx.bind(t, roomy, Identity{"t", 1, 2})
	_, peer := fx.bind(t, roomy, Identity{"t", 2, 1})
	members := []int64{1, 2, 3}
	pushes := []delivery.Addressed{
		{Target: delivery.Target{Recipients: members, Sender: 2, ExcludeDevice: 1}, Push: msgPush(1)},
		{Target: delivery.Target{Recipients: members, Sender: 1, ExcludeDevice: 1}, Push: msgPush(2)},
		{Target: delivery.Target{Recipients: members, Sender: 3, ExcludeDevice: 1}, Push: msgPush(3)},
	}
	out := fx.reg.PushReach(t.Context(), "t", pushes...)
	for i, want := range []delivery.Report{{Delivered: 2, Offline: 1}, {Delivered: 2, Offline: 1}, {Delivered: 3, Offline: 1}} {
		if out[i].Report != want || !slices.Equal(out[i].OfflineUsers, []int64{3}) {
			t.Fatalf("push %d: %+v; want %+v with user 3 offline", i, out[i], want)
		}
	}
	for _, c := range []struct {
		name string
		fc   *fakeConn
		want []int64
	}{{"sender's phone", phone, []int64{1, 3}}, {"sender's desk", desk, []int64{1, 2, 3}}, {"peer", peer, []int64{2, 3}}} {
		if writes := len(c.fc.pending); writes != 1 {
			t.Fatalf("%s: %d writes; want one", c.name, writes)
		}
		var seqs []int64
		for _, f := range c.fc.frames(t) {
			var env struct {
				Data wire.Message `json:"data"`
			}
			if err := json.Unmarshal(f.Body, &env); err != nil {
				t.Fatal(err)
			}
			seqs = append(seqs, env.Data.Seq)
		}
		if !slices.Equal(seqs, c.want) {
			t.Fatalf("%s got seqs %v; want %v", c.name, seqs, c.want)
		}
	}
}

// A MESSAGE queued on a connection before is not queued again: a deliver job pushed again after
// its consumer died, or reaching a node both by a forward and from the consumer that took it
// over, reaches each connection once; the memory is the connection's, another one gets it.
func TestRepeatedMessagePushReachesEachConnectionOnce(t *testing.T) {
	fx := newFixture()
	_, phone := fx.bind(t, roomy, Identity{"t", 1, 1})
	to := delivery.Target{Recipients: []int64{1}}
	for _, seqs := range [][]int64{{1, 2}, {1, 2, 3}, {3}} {
		for _, s := range seqs {
			if rep := fx.reg.Push(t.Context(), "t", to, msgPush(s)); rep != (delivery.Report{Delivered: 1}) {
				t.Fatalf("push of seq %d: %+v", s, rep)
			}
		}
	}
	if n := len(phone.frames(t)); n != 3 {
		t.Fatalf("%d frames, want seqs 1, 2 and 3 once each", n)
	}
	_, desk := fx.bind(t, roomy, Identity{"t", 1, 2})
	fx.reg.Push(t.Context(), "t", to, msgPush(3))
	if p, d := len(phone.frames(t)), len(desk.frames(t)); p != 3 || d != 1 {
		t.Fatalf("phone %d frames, desk %d; want 3 and 1", p, d)
	}
}
