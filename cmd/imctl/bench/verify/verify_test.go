package verify

import (
	"reflect"
	"strings"
	"sync"
	"testing"
)

// event is one step of a scenario: an ACK received by who, a push delivered
// to who, or who going offline.
type event struct {
	kind    string // "ack", "push", "offline"
	topic   string
	seq     int64
	msgID   int64
	who     Recipient
	outcome Outcome // expected outcome of a push
}

func ackOf(topic string, seq int64, sender Recipient) event {
	return event{kind: "ack", topic: topic, seq: seq, msgID: 1000 + seq, who: sender}
}

func push(r Recipient, topic string, seq int64, want Outcome) event {
	return event{kind: "push", topic: topic, seq: seq, who: r, outcome: want}
}

func TestTally(t *testing.T) {
	// Topic "g" has recipients 0, 1, 2; "p" has 0 and 3.
	tests := []struct {
		name    string
		events  []event
		want    Tally
		pending int64
	}{
		{
			name:   "nothing sent",
			events: nil,
			want:   Tally{},
		},
		{
			name: "group message reaches everyone but its sender",
			events: []event{
				ackOf("g", 1, 0), push(1, "g", 1, First), push(2, "g", 1, First),
			},
			want: Tally{Acked: 1, Expected: 2, Delivered: 2},
		},
		{
			name: "push before its ACK still matches",
			events: []event{
				push(3, "p", 1, First), ackOf("p", 1, 0),
			},
			want: Tally{Acked: 1, Expected: 1, Delivered: 1},
		},
		{
			name: "missing delivery",
			events: []event{
				ackOf("g", 1, 0), push(1, "g", 1, First),
			},
			want:    Tally{Acked: 1, Expected: 2, Delivered: 1, Missing: 1},
			pending: 1,
		},
		{
			name: "duplicate delivery",
			events: []event{
				ackOf("p", 1, 0), push(3, "p", 1, First), push(3, "p", 1, Duplicate),
			},
			want: Tally{Acked: 1, Expected: 1, Delivered: 1, Duplicated: 1},
		},
		{
			name: "out of order, with gaps from the recipient's own messages",
			events: []event{
				ackOf("p", 1, 3), ackOf("p", 2, 0), ackOf("p", 3, 3), ackOf("p", 4, 0), ackOf("p", 5, 0),
				push(3, "p", 2, First), push(3, "p", 5, First), push(3, "p", 4, OutOfOrder),
				push(0, "p", 1, First), push(0, "p", 3, First),
			},
			want: Tally{Acked: 5, Expected: 5, Delivered: 5, OutOfOrder: 1},
		},
		{
			name: "retry ACK with the same msg_id counts once",
			events: []event{
				ackOf("p", 1, 0), ackOf("p", 1, 0), push(3, "p", 1, First),
			},
			want: Tally{Acked: 1, Expected: 1, Delivered: 1},
		},
		{
			name: "same seq ACKed for two messages",
			events: []event{
				ackOf("p", 1, 0), {kind: "ack", topic: "p", seq: 1, msgID: 5, who: 3}, push(3, "p", 1, First),
			},
			want: Tally{Acked: 1, Expected: 1, Delivered: 1, Sync: SyncTally{AckConflicts: 1}},
		},
		{
			name: "delivery nobody ACKed is unexpected, not missing",
			events: []event{
				push(1, "g", 7, First), push(0, "x", 1, First),
			},
			want: Tally{Unexpected: 2},
		},
		{
			name: "a recipient that went offline is not owed anything",
			events: []event{
				ackOf("g", 1, 0), push(1, "g", 1, First), {kind: "offline", who: 2}, ackOf("g", 2, 0), push(1, "g", 2, First),
			},
			want:    Tally{Acked: 2, Expected: 2, Delivered: 2, Offline: 1},
			pending: 2,
		},
		{
			name: "a push to its own sender is unexpected",
			events: []event{
				ackOf("p", 1, 0), push(3, "p", 1, First), push(0, "p", 1, First),
			},
			want: Tally{Acked: 1, Expected: 1, Delivered: 1, Unexpected: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := scenarioVerifier()
			for i, e := range tt.events {
				switch e.kind {
				case "ack":
					v.Acked(e.topic, e.seq, e.msgID, e.who)
				case "push":
					if got := v.Delivered(e.who, e.topic, e.seq); got != e.outcome {
						t.Fatalf("event %d: outcome %d, want %d", i, got, e.outcome)
					}
				case "offline":
					v.Offline(e.who)
				}
			}
			got := v.Tally()
			got.Samples, got.Sync.Samples = nil, nil
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("tally\n got %+v\nwant %+v", got, tt.want)
			}
			if p := v.Pending(); p != tt.pending {
				t.Fatalf("Pending = %d, want %d", p, tt.pending)
			}
			if ok := tt.want.Missing == 0 && tt.want.Duplicated == 0 && tt.want.OutOfOrder == 0 && tt.want.Sync.AckConflicts == 0; got.OK() != ok {
				t.Fatalf("OK = %v, want %v", got.OK(), ok)
			}
			if got.OK() != (len(got.Problems()) == 0) {
				t.Fatalf("OK = %v but Problems = %q", got.OK(), got.Problems())
			}
		})
	}
}

func scenarioVerifier() *Verifier {
	v := New(4)
	for _, r := range []Recipient{0, 1, 2} {
		v.Join("g", r)
	}
	v.Join("p", 0)
	v.Join("p", 3)
	return v
}

func TestCheckStored(t *testing.T) {
	tests := []struct {
		name    string
		stored  []Stored
		order   Order
		want    SyncTally
		samples int
	}{
		{"all there", []Stored{{1, 1001}, {2, 1002}, {3, 1003}}, Ascending, SyncTally{Reads: 1, Checked: 3}, 0},
		{"all there, newest first", []Stored{{3, 1003}, {2, 1002}, {1, 1001}}, Descending, SyncTally{Reads: 1, Checked: 3}, 0},
		{"extra messages are fine", []Stored{{1, 1001}, {2, 1002}, {3, 1003}, {4, 9}}, Ascending, SyncTally{Reads: 1, Checked: 3}, 0},
		{"one missing", []Stored{{1, 1001}, {3, 1003}}, Ascending, SyncTally{Reads: 1, Checked: 3, Missing: 1}, 1},
		{"other msg_id", []Stored{{1, 1001}, {2, 77}, {3, 1003}}, Ascending, SyncTally{Reads: 1, Checked: 3, Mismatched: 1}, 1},
		{"nothing returned", nil, Descending, SyncTally{Reads: 1, Checked: 3, Missing: 3}, 3},
		{"repeated seq", []Stored{{1, 1001}, {2, 1002}, {2, 1002}, {3, 1003}}, Ascending, SyncTally{Reads: 1, Checked: 3, Repeated: 1}, 1},
		{"wrong order", []Stored{{1, 1001}, {3, 1003}, {2, 1002}}, Ascending, SyncTally{Reads: 1, Checked: 3, Unordered: 1}, 1},
		{"ascending read as descending", []Stored{{1, 1001}, {2, 1002}, {3, 1003}}, Descending, SyncTally{Reads: 1, Checked: 3, Unordered: 2}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := New(1) // only the sender is online: no deliveries are owed
			v.Join("g", 0)
			for seq := int64(1); seq <= 3; seq++ {
				v.Acked("g", seq, 1000+seq, 0)
			}
			v.CheckStored("g", tt.stored, tt.order)
			got := v.Tally()
			if got.OK() != (tt.samples == 0) {
				t.Errorf("OK = %v with problems %q", got.OK(), got.Problems())
			}
			if len(got.Sync.Samples) != tt.samples {
				t.Errorf("samples %q", got.Sync.Samples)
			}
			sync := got.Sync
			sync.Samples = nil
			if !reflect.DeepEqual(sync, tt.want) {
				t.Fatalf("sync tally %+v, want %+v", sync, tt.want)
			}
		})
	}
}

func TestTopicsAndSamples(t *testing.T) {
	v := scenarioVerifier()
	for seq := int64(1); seq <= 20; seq++ {
		v.Acked("g", seq, seq, 0)
	}
	v.Acked("p", 1, 1, 0)
	if got := v.Topics(); len(got) != 2 || got[0] != (TopicAcks{"g", 20}) || got[1] != (TopicAcks{"p", 1}) {
		t.Fatalf("Topics = %+v", got)
	}
	tally := v.Tally()
	if tally.Missing != 41 || len(tally.Samples) != maxSamples || !strings.Contains(tally.Samples[0], "g seq 1 (msg 1) never reached") {
		t.Fatalf("missing %d, samples %q", tally.Missing, tally.Samples)
	}
	want := []string{"41 ACKed deliveries missing"}
	if got := tally.Problems(); len(got) != 1 || got[0] != want[0] {
		t.Fatalf("Problems = %q, want %q", got, want)
	}
}

func TestDeliverySamples(t *testing.T) {
	v := scenarioVerifier()
	v.Delivered(3, "p", 5)
	v.Delivered(3, "p", 5)
	v.Delivered(3, "p", 4)
	want := []string{"recipient 3 got p seq 5 again", "recipient 3 got p seq 4 after seq 5"}
	if got := v.Tally().Samples; !reflect.DeepEqual(got, want) {
		t.Fatalf("samples %q, want %q", got, want)
	}
}

func TestConcurrentUse(t *testing.T) {
	const recipients, msgs = 8, 500
	v := New(recipients + 1)
	for r := range recipients + 1 {
		v.Join("g", Recipient(r))
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for seq := int64(1); seq <= msgs; seq++ {
			v.Acked("g", seq, seq, recipients)
		}
	})
	for r := range recipients {
		wg.Go(func() {
			for seq := int64(1); seq <= msgs; seq++ {
				v.Delivered(Recipient(r), "g", seq)
			}
		})
	}
	wg.Wait()
	if tally := v.Tally(); !tally.OK() || tally.Delivered != recipients*msgs || v.Pending() != 0 {
		t.Fatalf("tally %+v pending %d", tally, v.Pending())
	}
}

func TestSeqSet(t *testing.T) {
	s := make(seqSet)
	for _, seq := range []int64{0, 1, 63, 64, 1 << 40, -5} {
		if s.has(seq) || !s.add(seq) || !s.has(seq) || s.add(seq) {
			t.Fatalf("seq %d: set misbehaves", seq)
		}
	}
	if s.has(2) || s.has(65) || s.has(-4) {
		t.Fatal("set has seqs never added")
	}
}
