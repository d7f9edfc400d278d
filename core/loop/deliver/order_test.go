package deliver

import (
	"cmp"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/imdhq/imd/core/domain/delivery"
	"github.com/imdhq/imd/core/domain/dialog"
	"github.com/imdhq/imd/core/domain/message"
)

// orderJob is MESSAGE job id of topic at seq; ids tell repeats of a seq apart.
func orderJob(topic string, seq, id int64) delivery.Job {
	return delivery.Job{Kind: delivery.KindMessage, Topic: topic, MsgID: id, Message: &message.Message{Topic: topic, Seq: seq, MsgID: id}}
}

// sequencerStart is the time the sequencer tests start at.
var sequencerStart = time.Date(2026, 5, 14, 10, 0, 0, 0, time.UTC)

// label names a job in test expectations: topic/seq, and #id for repeats.
func label(j delivery.Job) string {
	if j.MsgID >= 100 {
		return fmt.Sprintf("%s%d#%d", j.Topic, j.Message.Seq, j.MsgID)
	}
	return fmt.Sprintf("%s%d", j.Topic, j.Message.Seq)
}

func labels(jobs []delivery.Job) []string {
	out := []string{}
	for _, j := range jobs {
		out = append(out, label(j))
	}
	return out
}

func TestSequencer(t *testing.T) {
	const wait = 200 * time.Millisecond
	type step struct {
		at     int    // ms since the start: when the job is taken, or how far the consumer caught up
		topic  string // "" expires instead of adding
		seq    int64
		id     int64    // 0: the seq
		queued int      // ms since the start the job was queued at; 0: when taken
		want   []string // jobs to handle now, in order
	}
	cases := []struct {
		name     string
		maxHeld  int
		baseline map[string]int64
		steps    []step
	}{
		{
			name:     "in order passes straight through",
			baseline: map[string]int64{"A": 0},
			steps: []step{
				{topic: "A", seq: 1, want: []string{"A1"}},
				{topic: "A", seq: 2, want: []string{"A2"}},
				{topic: "A", seq: 3, want: []string{"A3"}},
			},
		},
		{
			name:     "a gap holds the later seqs until it fills",
			baseline: map[string]int64{"A": 0},
			steps: []step{
				{topic: "A", seq: 3, want: []string{}},
				{at: 10, topic: "A", seq: 2, want: []string{}},
				{at: 20, topic: "A", seq: 1, want: []string{"A1", "A2", "A3"}},
				{at: 30, topic: "A", seq: 4, want: []string{"A4"}},
			},
		},
		{
			name:     "the baseline comes from before: older and repeated seqs pass at once",
			baseline: map[string]int64{"A": 5},
			steps: []step{
				{topic: "A", seq: 3, want: []string{"A3"}},
				{topic: "A", seq: 5, want: []string{"A5"}},
				{topic: "A", seq: 7, want: []string{}},
				{topic: "A", seq: 6, want: []string{"A6", "A7"}},
			},
		},
		{
			name:     "a gap is given up after the wait; its seq, if it comes, passes late",
			baseline: map[string]int64{"A": 0},
			steps: []step{
				{topic: "A", seq: 2, want: []string{}},
				{at: 199, want: []string{}},
				{at: 200, want: []string{"A2"}},
				{at: 250, topic: "A", seq: 3, want: []string{"A3"}},
				{at: 260, topic: "A", seq: 1, want: []string{"A1"}},
			},
		},
		{
			name:     "the wait counts from the job that waited longest",
			baseline: map[string]int64{"A": 0},
			steps: []step{
				{topic: "A", seq: 3, want: []string{}},
				{at: 150, topic: "A", seq: 2, want: []string{}},
				{at: 200, want: []string{"A2", "A3"}},
			},
		},
		{
			name:     "the wait counts from when the job was queued, not taken",
			baseline: map[string]int64{"A": 0},
			steps: []step{
				{at: 150, topic: "A", seq: 2, queued: 50, want: []string{}},
				{at: 249, want: []string{}},
				{at: 250, want: []string{"A2"}},
			},
		},
		{
			name:     "a second gap waits on its own",
			baseline: map[string]int64{"A": 0},
			steps: []step{
				{topic: "A", seq: 2, want: []string{}},
				{at: 150, topic: "A", seq: 4, want: []string{}},
				{at: 200, want: []string{"A2"}},
				{at: 300, topic: "A", seq: 3, want: []string{"A3", "A4"}},
			},
		},
		{
			name:     "a second gap given up in the same pass",
			baseline: map[string]int64{"A": 0},
			steps: []step{
				{topic: "A", seq: 2, want: []string{}},
				{at: 10, topic: "A", seq: 4, want: []string{}},
				{at: 500, want: []string{"A2", "A4"}},
			},
		},
		{
			name:     "repeats of a held seq come out together, in arrival order",
			baseline: map[string]int64{"A": 0},
			steps: []step{
				{topic: "A", seq: 2, id: 101, want: []string{}},
				{topic: "A", seq: 3, want: []string{}},
				{topic: "A", seq: 2, id: 102, want: []string{}},
				{topic: "A", seq: 1, want: []string{"A1", "A2#101", "A2#102", "A3"}},
			},
		},
		{
			name:     "too many held jobs give up the gap at once",
			maxHeld:  2,
			baseline: map[string]int64{"A": 0},
			steps: []step{
				{topic: "A", seq: 3, want: []string{}},
				{topic: "A", seq: 5, want: []string{}},
				{topic: "A", seq: 4, want: []string{"A3", "A4", "A5"}},
			},
		},
		{
			name:     "topics never wait on each other",
			baseline: map[string]int64{"A": 0, "B": 10},
			steps: []step{
				{topic: "A", seq: 2, want: []string{}},
				{topic: "B", seq: 11, want: []string{"B11"}},
				{at: 100, topic: "B", seq: 13, want: []string{}},
				{at: 200, want: []string{"A2"}},
				{at: 300, want: []string{"B13"}},
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			start := sequencerStart
			s := newSequencer(wait, cmp.Or(c.maxHeld, maxHeldPerTopic))
			for topic, last := range c.baseline {
				s.start(topic, last, start)
			}
			for i, st := range c.steps {
				now := start.Add(time.Duration(st.at) * time.Millisecond)
				var got []delivery.Job
				if st.topic == "" {
					got = s.expire(now, now)
				} else {
					id := st.id
					if id == 0 {
						id = st.seq
					}
					job := orderJob(st.topic, st.seq, id)
					if st.queued > 0 {
						job.QueuedAt = start.Add(time.Duration(st.queued) * time.Millisecond).UnixMilli()
					}
					got = s.add(job, now)
				}
				if l := labels(got); !slices.Equal(l, st.want) {
					t.Fatalf("step %d (%+v): handle %v; want %v", i, st, l, st.want)
				}
			}
			if due, ok := s.nextDue(); ok {
				t.Fatalf("jobs still held at the end (due %v): %v", due, labels(s.drain()))
			}
		})
	}
}

func TestSequencerNextDue(t *testing.T) {
	start := sequencerStart
	s := newSequencer(time.Second, 10)
	if _, ok := s.nextDue(); ok {
		t.Fatal("an empty sequencer has something due")
	}
	s.start("A", 0, start)
	s.start("B", 0, start)
	s.add(orderJob("A", 3, 3), start.Add(500*time.Millisecond))
	s.add(orderJob("B", 2, 2), start.Add(200*time.Millisecond))
	s.add(orderJob("A", 2, 2), start.Add(900*time.Millisecond))
	due, ok := s.nextDue()
	if want := start.Add(1200 * time.Millisecond); !ok || !due.Equal(want) {
		t.Fatalf("nextDue = %v, %v; want %v (B's job)", due, ok, want)
	}
}

func TestSequencerDrainHandsOverHeldJobsInOrder(t *testing.T) {
	start := sequencerStart
	s := newSequencer(time.Second, 10)
	s.start("A", 0, start)
	s.add(orderJob("A", 4, 4), start)
	s.add(orderJob("A", 2, 2), start)
	s.add(orderJob("A", 3, 3), start)
	if got := labels(s.drain()); !slices.Equal(got, []string{"A2", "A3", "A4"}) {
		t.Fatalf("drain = %v; want A2 A3 A4", got)
	}
	if s.known("A") {
		t.Fatal("a drained topic keeps its baseline")
	}
	if _, ok := s.nextDue(); ok {
		t.Fatal("jobs still due after drain")
	}
}

func TestSequencerForgetsIdleTopicsOnly(t *testing.T) {
	start := sequencerStart
	s := newSequencer(time.Second, 10)
	for _, topic := range []string{"idle", "holding", "busy"} {
		s.start(topic, 0, start)
	}
	s.add(orderJob("holding", 2, 2), start)
	s.add(orderJob("busy", 1, 1), start.Add(time.Minute))
	s.forget(start.Add(time.Second))
	for topic, want := range map[string]bool{"idle": false, "holding": true, "busy": true} {
		if got := s.known(topic); got != want {
			t.Errorf("known(%s) = %v; want %v", topic, got, want)
		}
	}
}

func TestSequencerWaitsForARunningSend(t *testing.T) {
	const wait = 200 * time.Millisecond
	type step struct {
		at      int     // ms since the start
		seq     int64   // a job of topic A to add; 0 expires (caught up to at)
		running []int64 // when not nil, the seqs of A whose sends run from now on
		want    []string
	}
	tests := []struct {
		name    string
		maxHold time.Duration
		steps   []step
	}{
		{"the gap's send still runs: waited for, then filled", time.Minute, []step{
			{running: []int64{1}, seq: 2, want: []string{}},
			{at: 200, want: []string{}},
			{at: 399, want: []string{}},
			{at: 450, running: []int64{}, seq: 1, want: []string{"A1", "A2"}},
		}},
		{"the gap's send failed: given up once caught up past the look that saw it over", time.Minute, []step{
			{running: []int64{1}, seq: 2, want: []string{}},
			{at: 200, want: []string{}},
			{at: 300, running: []int64{}, want: []string{}},
			{at: 400, want: []string{}},
			{at: 401, want: []string{"A2"}},
		}},
		{"the gap's send ended and its job turns up behind a later one", time.Minute, []step{
			{running: []int64{1}, seq: 2, want: []string{}},
			{at: 200, running: []int64{}, want: []string{}},
			{at: 200, seq: 1, want: []string{"A1", "A2"}},
		}},
		{"a send that never returns is waited for maxHold", time.Second, []step{
			{running: []int64{1}, seq: 2, want: []string{}},
			{at: 600, want: []string{}},
			{at: 999, want: []string{}},
			{at: 1000, want: []string{"A2"}},
		}},
		{"a running send of a later seq does not hold the gap", time.Minute, []step{
			{running: []int64{3}, seq: 2, want: []string{}},
			{at: 200, want: []string{}},
			{at: 201, want: []string{"A2"}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := sequencerStart
			var running []int64
			s := newSequencer(wait, maxHeldPerTopic)
			s.maxHold = tt.maxHold
			s.sending = func(topic string, from, to int64) bool {
				if topic != "A" {
					t.Fatalf("asked about topic %s", topic)
				}
				return slices.ContainsFunc(running, func(n int64) bool { return n >= from && n <= to })
			}
			s.start("A", 0, start)
			for i, st := range tt.steps {
				now := start.Add(time.Duration(st.at) * time.Millisecond)
				if st.running != nil {
					running = st.running
				}
				var got []delivery.Job
				if st.seq == 0 {
					got = s.expire(now, now)
				} else {
					got = s.add(orderJob("A", st.seq, st.seq), now)
				}
				if l := labels(got); !slices.Equal(l, st.want) {
					t.Fatalf("step %d (%+v): handle %v; want %v", i, st, l, st.want)
				}
			}
		})
	}
}

// TestLateJobsOfAPassGoOutInSeqOrder: after a takeover the new consumer's baseline is past the
// jobs the dead one had moved the lists for, so they are late, and they come back in the order
// they were queued (b21 before b20). The pass puts each topic's jobs in seq order in the places
// that topic's jobs hold; other jobs keep their places; a pass without a late job is left alone.
func TestLateJobsOfAPassGoOutInSeqOrder(t *testing.T) {
	cases := []struct {
		name string
		jobs []delivery.Job
		want []string
	}{
		{"requeued in queue order", []delivery.Job{orderJob("b", 21, 1), orderJob("a", 5, 2), orderJob("b", 20, 3), orderJob("b", 22, 4)},
			[]string{"b20", "a5", "b21", "b22"}},
		{"in order already", []delivery.Job{orderJob("b", 20, 1), orderJob("b", 21, 2)}, []string{"b20", "b21"}},
		{"repeats keep their order", []delivery.Job{orderJob("b", 21, 100), orderJob("b", 20, 101), orderJob("b", 21, 102)},
			[]string{"b20#101", "b21#100", "b21#102"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newSequencer(200*time.Millisecond, 10)
			s.start("a", 4, sequencerStart)
			s.start("b", 22, sequencerStart) // the dead consumer moved b's lists up to 22
			var ready []delivery.Job
			for _, job := range c.jobs {
				ready = append(ready, s.add(job, sequencerStart)...)
			}
			if !s.lateSeen() {
				t.Fatal("no late job seen")
			}
			inSeqOrder(ready)
			if got := labels(ready); !slices.Equal(got, c.want) {
				t.Fatalf("pass %v, want %v", got, c.want)
			}
			if s.lateSeen() {
				t.Fatal("late seen again without a late job")
			}
		})
	}
}

// The seqs a consumer goes past without their jobs are gaps for the list repair: a gap given
// up after the wait, the seqs between held jobs a stop drains, and none for a late job, which
// is marked as behind instead.
func TestSequencerNotesTheGapsItPasses(t *testing.T) {
	const wait = time.Second
	start := sequencerStart
	s := newSequencer(wait, 10)
	s.start("A", 1, start)
	s.start("B", 0, start)
	s.add(orderJob("A", 5, 5), start)
	if got := labels(s.expire(start.Add(wait), start.Add(wait))); !slices.Equal(got, []string{"A5"}) {
		t.Fatalf("expire = %v; want A5", got)
	}
	late := orderJob("A", 3, 3)
	s.add(late, start.Add(wait))
	s.add(orderJob("B", 2, 2), start.Add(wait))
	s.add(orderJob("B", 5, 5), start.Add(wait))
	s.drain()
	gaps := s.takeGaps()
	slices.SortFunc(gaps, func(a, b dialog.Gap) int { return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.From, b.From)) })
	want := []dialog.Gap{{Topic: "A", From: 2, To: 4}, {Topic: "B", From: 1, To: 1}, {Topic: "B", From: 3, To: 4}}
	if !slices.Equal(gaps, want) {
		t.Fatalf("gaps = %+v; want %+v", gaps, want)
	}
	if got := s.takeGaps(); got != nil {
		t.Fatalf("gaps taken twice: %+v", got)
	}
	if behind := s.takeBehind(); len(behind) != 1 || !behind[late.DoneKey()] {
		t.Fatalf("behind = %v; want only the late A3", behind)
	}
}
