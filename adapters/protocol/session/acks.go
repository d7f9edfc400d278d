package session

import (
	"sync"
	"time"

	"github.com/imdhq/imd/core/domain/message"
)

// Unacked is a MESSAGE push its device never acknowledged with PUSH_ACK: the acknowledgement
// timed out, the connection had too many pushes outstanding, or it closed first. The frame
// may or may not have reached the device; whoever handles this degrades to the mailbox or the
// push notifier (seed 003 §8), the connection itself is never closed for it.
type Unacked struct {
	Identity
	Message *message.Message
	// Closed: the connection closed with the push outstanding, rather than timing out.
	Closed bool
}

// keptAckCapacity bounds the queue memory an idle connection keeps between bursts.
const keptAckCapacity = 64

// acks are one connection's MESSAGE pushes waiting for PUSH_ACK, oldest first. Sequence ids
// are assigned in queue order under the same lock, so the queue is sorted by them and an ack
// usually matches its head.
type acks struct {
	mu      sync.Mutex
	pending []pendingAck // pending[head:] are live
	head    int
}

type pendingAck struct {
	seq   uint32
	due   time.Time
	msg   *message.Message
	acked bool
}

// track numbers a push with next and queues it until due. When window pushes are already
// outstanding, the oldest is given up and returned.
func (a *acks) track(next func() uint32, msg *message.Message, due time.Time, window int) (seq uint32, dropped *message.Message) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.pending)-a.head >= window {
		oldest := a.pending[a.head]
		a.pending[a.head] = pendingAck{}
		a.head++
		if !oldest.acked {
			dropped = oldest.msg
		}
		a.trim()
	}
	seq = next()
	a.pending = append(a.pending, pendingAck{seq: seq, due: due, msg: msg})
	return seq, dropped
}

// ack settles seq and returns its message, reporting whether it was outstanding. Acks come in
// push order unless the client reorders them, so the search almost always stops at the head.
func (a *acks) ack(seq uint32) (*message.Message, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for i := a.head; i < len(a.pending); i++ {
		if p := &a.pending[i]; p.seq == seq && !p.acked {
			msg := p.msg
			p.acked, p.msg = true, nil
			a.trim()
			return msg, true
		}
	}
	return nil, false
}

// expire removes what is due by now and returns the messages of those never acknowledged.
func (a *acks) expire(now time.Time) []*message.Message {
	a.mu.Lock()
	defer a.mu.Unlock()
	var late []*message.Message
	for a.head < len(a.pending) && !a.pending[a.head].due.After(now) {
		if p := a.pending[a.head]; !p.acked {
			late = append(late, p.msg)
		}
		a.pending[a.head] = pendingAck{}
		a.head++
	}
	a.trim()
	return late
}

// drain removes everything and returns the messages never acknowledged.
func (a *acks) drain() []*message.Message {
	a.mu.Lock()
	defer a.mu.Unlock()
	var open []*message.Message
	for _, p := range a.pending[a.head:] {
		if !p.acked {
			open = append(open, p.msg)
		}
	}
	a.pending, a.head = nil, 0
	return open
}

// trim drops settled entries at the head and reclaims the space before it.
func (a *acks) trim() {
	for a.head < len(a.pending) && a.pending[a.head].acked {
		a.pending[a.head] = pendingAck{}
		a.head++
	}
	switch live := len(a.pending) - a.head; {
	case live == 0 && cap(a.pending) > keptAckCapacity:
		a.pending, a.head = nil, 0
	case live == 0:
		a.pending, a.head = a.pending[:0], 0
	case a.head >= live:
		// Mostly dead space: move the live entries down so append reuses it.
		n := copy(a.pending, a.pending[a.head:])
		clear(a.pending[n:])
		a.pending, a.head = a.pending[:n], 0
	}
}
