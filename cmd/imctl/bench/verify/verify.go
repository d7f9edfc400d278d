// Package verify checks the delivery guarantees while a load test runs: every
// ACKed message reaches each online recipient of its topic exactly once, in
// seq order, and stays readable afterwards.
//
// Pushes may arrive before their sender sees the SEND_ACK, so deliveries and
// ACKs are recorded independently and matched only in Tally.
package verify

import (
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
)

// Recipient identifies one online connection (a user's device); the caller
// numbers them 0..n-1.
type Recipient int

// Outcome classifies one delivery to one recipient.
type Outcome int

const (
	// First is the first delivery of that seq, in order.
	First Outcome = iota
	// Duplicate is a seq the recipient already had on that topic.
	Duplicate
	// OutOfOrder is a first delivery below a seq already delivered.
	OutOfOrder
)

// maxSamples bounds the examples of failures a Tally keeps.
const maxSamples = 10

// Verifier accumulates ACKs and deliveries; it is safe for concurrent use.
type Verifier struct {
	recipients []recipientState

	mu     sync.Mutex
	topics map[string]*topicState

	expected   atomic.Int64 // deliveries the ACKs so far call for
	unique     atomic.Int64 // first deliveries so far, matched or not
	duplicated atomic.Int64
	outOfOrder atomic.Int64

	samplesMu sync.Mutex
	samples   []string // examples of bad deliveries, as they happen

	syncMu sync.Mutex
	sync   SyncTally
}

type recipientState struct {
	mu      sync.Mutex
	offline bool
	tracks  map[string]*track
}

// track is what one recipient received on one topic.
type track struct {
	seen seqSet
	last int64
}

type topicState struct {
	mu      sync.Mutex
	members []Recipient
	acked   map[int64]ack
}

type ack struct {
	msgID  int64
	sender Recipient
}

// New returns a Verifier for recipients numbered 0..n-1.
func New(n int) *Verifier {
	v := &Verifier{recipients: make([]recipientState, n), topics: make(map[string]*topicState)}
	for i := range v.recipients {
		v.recipients[i].tracks = make(map[string]*track)
	}
	return v
}

// Join makes r an online recipient of topic. Call it before any message of
// the topic is sent, so that r is expected to receive all of them.
func (v *Verifier) Join(topic string, r Recipient) {
	t := v.topic(topic)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.members = append(t.members, r)
}

// Offline marks r as gone (its connection dropped): it is not expected to
// receive anything any more, and nothing it missed counts. The caller reports
// the lost connection itself.
func (v *Verifier) Offline(r Recipient) {
	rs := &v.recipients[r]
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.offline = true
}

func (v *Verifier) topic(name string) *topicState {
	v.mu.Lock()
	defer v.mu.Unlock()
	t := v.topics[name]
	if t == nil {
		t = &topicState{acked: make(map[int64]ack)}
		v.topics[name] = t
	}
	return t
}

// Acked records a SEND_ACK that sender received. A second ACK of the same seq
// with the same msg_id is a retry and counts once; with another msg_id it is
// a conflict: two messages share a seq.
func (v *Verifier) Acked(topic string, seq, msgID int64, sender Recipient) {
	t := v.topic(topic)
	t.mu.Lock()
	defer t.mu.Unlock()
	if prev, ok := t.acked[seq]; ok {
		if prev.msgID != msgID {
			v.syncMu.Lock()
			v.sync.AckConflicts++
			v.sync.addSample(fmt.Sprintf("%s seq %d acked as msg %d and %d", topic, seq, prev.msgID, msgID))
			v.syncMu.Unlock()
		}
		return
	}
	t.acked[seq] = ack{msgID: msgID, sender: sender}
	n := int64(0)
	for _, m := range t.members {
		if m != sender {
			n++
		}
	}
	v.expected.Add(n)
}

// Delivered records a MESSAGE push of topic/seq received by r.
func (v *Verifier) Delivered(r Recipient, topic string, seq int64) Outcome {
	rs := &v.recipients[r]
	rs.mu.Lock()
	defer rs.mu.Unlock()
	tr := rs.tracks[topic]
	if tr == nil {
		tr = &track{seen: make(seqSet)}
		rs.tracks[topic] = tr
	}
	if !tr.seen.add(seq) {
		v.duplicated.Add(1)
		v.sample(fmt.Sprintf("recipient %d got %s seq %d again", r, topic, seq))
		return Duplicate
	}
	v.unique.Add(1)
	if seq < tr.last {
		v.outOfOrder.Add(1)
		v.sample(fmt.Sprintf("recipient %d got %s seq %d after seq %d", r, topic, seq, tr.last))
		return OutOfOrder
	}
	tr.last = seq
	return First
}

func (v *Verifier) sample(msg string) {
	v.samplesMu.Lock()
	defer v.samplesMu.Unlock()
	if len(v.samples) < maxSamples {
		v.samples = append(v.samples, msg)
	}
}

// Pending estimates the deliveries still to come. It can undercount when
// messages that were never ACKed were delivered, so use it to decide how long
// to wait, never as a result.
func (v *Verifier) Pending() int64 {
	return max(v.expected.Load()-v.unique.Load(), 0)
}

// Stored is a message as read back from the server.
type Stored struct {
	Seq   int64
	MsgID int64
}

// Order is the seq order a read returns messages in.
type Order int

const (
	// Ascending is the order of SYNC_MESSAGES.
	Ascending Order = iota
	// Descending is the order of GET_HISTORY.
	Descending
)

// CheckStored compares one complete read of topic with the ACKs: every ACKed
// seq must be there with its msg_id, each seq once, in order.
func (v *Verifier) CheckStored(topic string, got []Stored, order Order) {
	var repeated, unordered int64
	byseq := make(map[int64]int64, len(got))
	for i, s := range got {
		if _, dup := byseq[s.Seq]; dup {
			repeated++
		} else if i > 0 && (order == Ascending) != (s.Seq > got[i-1].Seq) {
			unordered++
		}
		byseq[s.Seq] = s.MsgID
	}
	t := v.topic(topic)
	t.mu.Lock()
	defer t.mu.Unlock()
	v.syncMu.Lock()
	defer v.syncMu.Unlock()
	v.sync.Reads++
	v.sync.Repeated += repeated
	v.sync.Unordered += unordered
	if repeated+unordered > 0 {
		v.sync.addSample(fmt.Sprintf("a read of %s returned %d repeated and %d misordered seqs", topic, repeated, unordered))
	}
	for _, seq := range slices.Sorted(maps.Keys(t.acked)) {
		v.sync.Checked++
		msgID, ok := byseq[seq]
		switch {
		case !ok:
			v.sync.Missing++
			v.sync.addSample(fmt.Sprintf("%s seq %d acked but not stored", topic, seq))
		case msgID != t.acked[seq].msgID:
			v.sync.Mismatched++
			v.sync.addSample(fmt.Sprintf("%s seq %d stored as msg %d, acked as %d", topic, seq, msgID, t.acked[seq].msgID))
		}
	}
}

// TopicAcks is how many ACKed messages a topic has.
type TopicAcks struct {
	Topic string
	Acked int
}

// Topics lists the topics with ACKed messages, by name.
func (v *Verifier) Topics() []TopicAcks {
	v.mu.Lock()
	names := slices.Sorted(maps.Keys(v.topics))
	v.mu.Unlock()
	var out []TopicAcks
	for _, name := range names {
		t := v.topic(name)
		t.mu.Lock()
		if n := len(t.acked); n > 0 {
			out = append(out, TopicAcks{Topic: name, Acked: n})
		}
		t.mu.Unlock()
	}
	return out
}

// SyncTally counts the read-back checks and ACK conflicts.
type SyncTally struct {
	Reads        int      `json:"reads"`         // complete reads of a topic checked
	Checked      int64    `json:"checked"`       // ACKed messages looked for, over all reads
	Missing      int64    `json:"missing"`       // ACKed but not returned
	Mismatched   int64    `json:"mismatched"`    // returned with another msg_id
	Repeated     int64    `json:"repeated"`      // a seq returned twice in one read
	Unordered    int64    `json:"unordered"`     // a seq out of the read's order
	AckConflicts int64    `json:"ack_conflicts"` // one seq ACKed for two msg_ids
	Samples      []string `json:"samples,omitempty"`
}

func (s *SyncTally) addSample(msg string) {
	if len(s.Samples) < maxSamples {
		s.Samples = append(s.Samples, msg)
	}
}

// Tally is the outcome of a run.
type Tally struct {
	Acked      int64 `json:"acked"`      // distinct ACKed messages
	Expected   int64 `json:"expected"`   // deliveries the ACKs call for, to recipients still online
	Delivered  int64 `json:"delivered"`  // expected deliveries that arrived
	Missing    int64 `json:"missing"`    // expected deliveries that never arrived
	Duplicated int64 `json:"duplicated"` // pushes of a seq the recipient already had
	OutOfOrder int64 `json:"out_of_order"`
	// Unexpected are first deliveries no ACK accounts for: messages whose ACK
	// was lost to a timeout, or pushes to their own sender.
	Unexpected int64     `json:"unexpected"`
	Offline    int       `json:"offline_recipients"`
	Sync       SyncTally `json:"sync"`
	Samples    []string  `json:"samples,omitempty"`
}

// OK reports whether every guarantee held.
func (t Tally) OK() bool {
	return t.Missing == 0 && t.Duplicated == 0 && t.OutOfOrder == 0 &&
		t.Sync.Missing == 0 && t.Sync.Mismatched == 0 && t.Sync.Repeated == 0 && t.Sync.Unordered == 0 &&
		t.Sync.AckConflicts == 0
}

// Problems lists the guarantees that failed, in words.
func (t Tally) Problems() []string {
	var out []string
	for _, p := range []struct {
		n    int64
		what string
	}{
		{t.Missing, "ACKed deliveries missing"},
		{t.Duplicated, "duplicate deliveries"},
		{t.OutOfOrder, "deliveries out of seq order"},
		{t.Sync.Missing, "ACKed messages not readable back"},
		{t.Sync.Mismatched, "messages read back with another msg_id"},
		{t.Sync.Repeated, "seqs repeated within one read"},
		{t.Sync.Unordered, "seqs out of order within one read"},
		{t.Sync.AckConflicts, "seqs ACKed for two different messages"},
	} {
		if p.n > 0 {
			out = append(out, fmt.Sprintf("%d %s", p.n, p.what))
		}
	}
	return out
}

// Tally computes the outcome. Call it once recording has stopped.
func (v *Verifier) Tally() Tally {
	tally := Tally{Duplicated: v.duplicated.Load(), OutOfOrder: v.outOfOrder.Load()}
	v.samplesMu.Lock()
	tally.Samples = slices.Clone(v.samples)
	v.samplesMu.Unlock()
	for i := range v.recipients {
		rs := &v.recipients[i]
		rs.mu.Lock()
		if rs.offline {
			tally.Offline++
		}
		rs.mu.Unlock()
	}
	v.mu.Lock()
	names := slices.Sorted(maps.Keys(v.topics))
	v.mu.Unlock()
	for _, name := range names {
		t := v.topic(name)
		t.mu.Lock()
		for _, seq := range slices.Sorted(maps.Keys(t.acked)) {
			a := t.acked[seq]
			tally.Acked++
			for _, m := range t.members {
				if m == a.sender {
					continue
				}
				got, online := v.received(m, name, seq)
				switch {
				case got:
					tally.Expected++
					tally.Delivered++
				case online:
					tally.Expected++
					tally.Missing++
					if len(tally.Samples) < maxSamples {
						tally.Samples = append(tally.Samples, fmt.Sprintf("%s seq %d (msg %d) never reached recipient %d", name, seq, a.msgID, m))
					}
				}
			}
		}
		t.mu.Unlock()
	}
	tally.Unexpected = max(v.unique.Load()-tally.Delivered, 0)
	v.syncMu.Lock()
	tally.Sync = v.sync
	tally.Sync.Samples = slices.Clone(v.sync.Samples)
	v.syncMu.Unlock()
	return tally
}

// received reports whether r got topic/seq, and whether r is still online.
func (v *Verifier) received(r Recipient, topic string, seq int64) (got, online bool) {
	rs := &v.recipients[r]
	rs.mu.Lock()
	defer rs.mu.Unlock()
	tr := rs.tracks[topic]
	return tr != nil && tr.seen.has(seq), !rs.offline
}

// seqSet is a sparse bitset of seqs: dense topics cost a bit per seq, and a
// stray huge seq costs one map entry, not a giant slice.
type seqSet map[int64]uint64

// add inserts seq and reports whether it was new.
func (s seqSet) add(seq int64) bool {
	word, bit := seq>>6, uint64(1)<<(seq&63)
	if s[word]&bit != 0 {
		return false
	}
	s[word] |= bit
	return true
}

func (s seqSet) has(seq int64) bool { return s[seq>>6]&(1<<(seq&63)) != 0 }
