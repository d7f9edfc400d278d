package session

import "sync"

// pushedTopicsCap bounds the topics one connection remembers; past it the memory starts over,
// so a repeated push may then reach the device once more (clients drop it by (topic, seq)).
const pushedTopicsCap = 1024

// pushedWindow is how many seqs up to a topic's highest one a connection tells apart: a push
// further behind is taken for a repeat.
const pushedWindow = 64

// pushed is, per topic, the MESSAGE seqs queued on one connection: which of the pushedWindow
// seqs up to the highest one. Jobs are pushed at least once, so the same push comes again:
// the rerun of a deliver job whose consumer died after pushing and before marking it done, or
// the same push arriving both from another node's forward and from the consumer that took the
// job over (docs/NODES.md). Dropping a repeat makes a live push reach each connection once.
// Only a seq already queued is dropped, not every seq below the highest: around a takeover a
// topic's pushes can reach a connection out of seq order (a job the new consumer handled after
// a later one), and the late one must still reach the device, which orders by seq.
type pushed struct {
	mu     sync.Mutex
	topics map[string]pushedSeqs
}

// pushedSeqs: bit i of seen is seq high-i.
type pushedSeqs struct {
	high int64
	seen uint64
}

// first reports whether seq of topic was never queued on this connection, and remembers it.
func (p *pushed) first(topic string, seq int64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	s, ok := p.topics[topic]
	switch {
	case !ok:
		if p.topics == nil || len(p.topics) >= pushedTopicsCap {
			p.topics = make(map[string]pushedSeqs)
		}
		s = pushedSeqs{high: seq, seen: 1}
	case seq > s.high:
		if shift := seq - s.high; shift < pushedWindow {
			s.seen <<= shift
		} else {
			s.seen = 0
		}
		s.high, s.seen = seq, s.seen|1
	case s.high-seq >= pushedWindow:
		return false
	default:
		bit := uint64(1) << (s.high - seq)
		if s.seen&bit != 0 {
			return false
		}
		s.seen |= bit
	}
	p.topics[topic] = s
	return true
}

// refused undoes first for a push the connection did not take, so a repeat may try again.
func (p *pushed) refused(topic string, seq int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if s, ok := p.topics[topic]; ok && seq <= s.high && s.high-seq < pushedWindow {
		s.seen &^= uint64(1) << (s.high - seq)
		p.topics[topic] = s
	}
}
