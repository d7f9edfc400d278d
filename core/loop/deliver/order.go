package deliver

import (
	"cmp"
	"slices"
	"time"

	"github.com/imdhq/imd/core/domain/delivery"
	"github.com/imdhq/imd/core/domain/dialog"
)

// sequencer puts one partition's MESSAGE jobs back into seq order per topic. Jobs reach the
// queue in commit-and-enqueue order, which is not seq order: a group-commit batch answers its
// senders together and they push in whatever order they are scheduled. A job whose seq is
// ahead of the next one expected is held until the missing seqs arrive, or until the consumer
// has caught up with the queue to `wait` after the job was queued: an allocated seq whose send
// failed must not hold its topic for long (its tombstone, written by the sweeper much later,
// is never delivered). Caught up, not merely later: behind a backlog the missing jobs may
// still be queued, and giving up then would deliver them out of order. Holding never blocks
// other topics. A sequencer belongs to one consumer goroutine and is not safe for concurrent
// use.
type sequencer struct {
	wait    time.Duration
	maxHeld int // per topic; beyond it the oldest gap is given up at once
	topics  map[string]*topicOrder
	waiting map[string]*topicOrder // the topics holding jobs
	// sending, when set, tells whether a send of a seq in [from, to] of topic still runs on
	// this node: such a gap is waited for another `wait`, until its first held job has waited
	// maxHold since it was queued.
	sending func(topic string, from, to int64) bool
	maxHold time.Duration
	// late: add returned a job behind its topic's next seq since the last lateSeen.
	late bool
	// behind are the done keys of the jobs add returned behind their topic's next seq since
	// the last takeBehind: their markers must outlive a list repair (Workers.markerTTL).
	behind map[string]bool
	// gaps are the seqs passed without their jobs since the last takeGaps (dialog.Gap).
	gaps []dialog.Gap
}

// topicOrder is what the sequencer knows of one topic.
type topicOrder struct {
	next     int64 // the seq expected next: the last one handled + 1
	held     []heldJob
	active   time.Time // when its last job came
	deferred time.Time // not due before this (the gap's send was running, or just ended)
	ended    bool      // the gap's sends were seen over: once caught up past deferred, give it up
}

// heldJob is a job waiting for the seqs before it.
type heldJob struct {
	job    delivery.Job
	queued time.Time
	until  time.Time // queued + the wait when it was held
}

func (h heldJob) seq() int64 { return h.job.Message.Seq }

func newSequencer(wait time.Duration, maxHeld int) *sequencer {
	return &sequencer{wait: wait, maxHeld: max(maxHeld, 1), topics: map[string]*topicOrder{}, waiting: map[string]*topicOrder{}}
}

// known reports whether the topic has a baseline; add needs one.
func (s *sequencer) known(topic string) bool {
	_, ok := s.topics[topic]
	return ok
}

// start gives a topic its baseline: last is the newest seq of it handled before.
func (s *sequencer) start(topic string, last int64, now time.Time) {
	s.topics[topic] = &topicOrder{next: last + 1, active: now}
}

// add takes a MESSAGE job of a known topic, taken at now, and returns the jobs to handle now,
// in order: the job itself when it is the next one expected (with the held ones it makes
// contiguous) or when it is late (a repeat, or a seq given up before: holding cannot put it
// in order any more), or nothing when it is held.
func (s *sequencer) add(job delivery.Job, now time.Time) []delivery.Job {
	t := s.topics[job.Topic]
	t.active = now
	seq := job.Message.Seq
	switch {
	case seq < t.next:
		s.late = true
		if s.behind == nil {
			s.behind = map[string]bool{}
		}
		s.behind[job.DoneKey()] = true
		return []delivery.Job{job}
	case seq == t.next:
		t.next++
		return s.release(job.Topic, t, []delivery.Job{job})
	}
	// After the held jobs of the same seq, so repeats keep their arrival order.
	i, _ := slices.BinarySearchFunc(t.held, seq+1, func(h heldJob, target int64) int { return int(h.seq() - target) })
	queued := now
	if job.QueuedAt > 0 {
		queued = time.UnixMilli(job.QueuedAt)
	}
	t.held = slices.Insert(t.held, i, heldJob{job: job, queued: queued, until: queued.Add(s.wait)})
	s.waiting[job.Topic] = t
	if len(t.held) > s.maxHeld {
		return s.skip(job.Topic, t, nil)
	}
	return nil
}

// expire gives up the gaps whose jobs are due by caughtUp, the time up to which the consumer
// has taken every job queued, and returns the jobs that become due, each topic's in order. A
// gap whose send still runs is deferred instead (see sending).
func (s *sequencer) expire(caughtUp, now time.Time) []delivery.Job {
	var out []delivery.Job
	for topic, t := range s.waiting {
		for len(t.held) > 0 && !caughtUp.Before(t.due()) {
			first := t.held[0]
			limit := first.queued.Add(s.maxHold)
			if s.sending != nil && now.Before(limit) {
				if s.sending(topic, t.next, first.seq()-1) {
					t.deferred, t.ended = now.Add(s.wait), false
					if t.deferred.After(limit) {
						t.deferred = limit
					}
					break
				}
				if !t.ended {
					// The sends are over, so what they queued went in before now; but a job
					// stamped later may have overtaken it into the list. Taking everything
					// queued up to now first puts those jobs in order.
					t.deferred, t.ended = now.Add(time.Millisecond), true
					break
				}
			}
			out = s.skip(topic, t, out)
		}
	}
	return out
}

// takeBehind returns the done keys of the jobs add returned behind their topic since the last
// call, nil when none.
func (s *sequencer) takeBehind() map[string]bool {
	b := s.behind
	s.behind = nil
	return b
}

// takeGaps returns the gaps passed since the last call.
func (s *sequencer) takeGaps() []dialog.Gap {
	g := s.gaps
	s.gaps = nil
	return g
}

// passed notes that the seqs from next up to the held job h went by without their jobs.
func (s *sequencer) passed(topic string, next int64, h heldJob) {
	if h.seq() > next {
		s.gaps = append(s.gaps, dialog.Gap{Topic: topic, ConversationID: h.job.ConversationID, From: next, To: h.seq() - 1})
	}
}

// lateSeen reports whether add returned a late job since the last call.
func (s *sequencer) lateSeen() bool {
	late := s.late
	s.late = false
	return late
}

// inSeqOrder sorts each topic's MESSAGE jobs of one pass by seq, in the places that topic's
// jobs hold. Late jobs go out as they were taken, which is queue order: jobs a takeover
// requeued, whose lists the consumer that died had already moved past them (the new
// consumer's baseline), come back in the order they were queued, not by seq, and a connection
// that got a later seq first would see the earlier one out of order.
func inSeqOrder(jobs []delivery.Job) {
	places := map[string][]int{}
	for i, job := range jobs {
		if job.Kind == delivery.KindMessage && job.Message != nil {
			places[job.Topic] = append(places[job.Topic], i)
		}
	}
	for _, at := range places {
		if len(at) < 2 {
			continue
		}
		topic := make([]delivery.Job, len(at))
		for k, i := range at {
			topic[k] = jobs[i]
		}
		slices.SortStableFunc(topic, func(a, b delivery.Job) int { return cmp.Compare(a.Message.Seq, b.Message.Seq) })
		for k, i := range at {
			jobs[i] = topic[k]
		}
	}
}

// nextDue is the earliest time a held job becomes due; ok=false when none is held.
func (s *sequencer) nextDue() (due time.Time, ok bool) {
	for _, t := range s.waiting {
		if d := t.due(); !ok || d.Before(due) {
			due, ok = d, true
		}
	}
	return due, ok
}

// drain returns every held job, each topic's in seq order, and forgets the topics: the
// consumer is stopping, and late is better than at the next boot. The seqs it goes past are
// gaps, as skip's are.
func (s *sequencer) drain() []delivery.Job {
	var out []delivery.Job
	for topic, t := range s.waiting {
		next := t.next
		for _, h := range t.held {
			s.passed(topic, next, h)
			next = max(next, h.seq()+1)
			out = append(out, h.job)
		}
		delete(s.topics, topic)
	}
	clear(s.waiting)
	return out
}

// forget drops the topics without held jobs and without a job since idleSince; a later job of
// one of them starts it again from a fresh baseline.
func (s *sequencer) forget(idleSince time.Time) {
	for topic, t := range s.topics {
		if len(t.held) == 0 && t.active.Before(idleSince) {
			delete(s.topics, topic)
		}
	}
}

// skip gives up the gap before the first held job and releases what follows it.
func (s *sequencer) skip(topic string, t *topicOrder, out []delivery.Job) []delivery.Job {
	s.passed(topic, t.next, t.held[0])
	t.next = t.held[0].seq()
	return s.release(topic, t, out)
}

// release appends the held jobs that are no longer ahead of next, advancing it.
func (s *sequencer) release(topic string, t *topicOrder, out []delivery.Job) []delivery.Job {
	n := 0
	for n < len(t.held) && t.held[n].seq() <= t.next {
		if t.held[n].seq() == t.next {
			t.next++
		}
		out = append(out, t.held[n].job)
		n++
	}
	if n > 0 {
		t.deferred, t.ended = time.Time{}, false // a new gap, if any, gets its own wait
	}
	t.held = slices.Delete(t.held, 0, n)
	if len(t.held) == 0 {
		delete(s.waiting, topic)
	}
	return out
}

// due is the earliest time one of the topic's held jobs becomes due, or later when the gap
// was deferred.
func (t *topicOrder) due() time.Time {
	due := t.held[0].until
	for _, h := range t.held[1:] {
		if h.until.Before(due) {
			due = h.until
		}
	}
	if t.deferred.After(due) {
		return t.deferred
	}
	return due
}

// empty reports whether no job is held.
func (s *sequencer) empty() bool { return len(s.waiting) == 0 }

// reset returns every held job as drain does and forgets every topic: the partition went to
// another node, whose jobs move each topic past what this one knew.
func (s *sequencer) reset() []delivery.Job {
	out := s.drain()
	clear(s.topics)
	return out
}
