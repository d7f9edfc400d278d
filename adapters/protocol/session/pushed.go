package session

import "sync"

// pushedTopicsCap bounds the topics one connection remembers; past it the memory starts over,
// so a repeated push may then reach the device once more (clients drop it by (topic, seq)).
const pushedTopicsCap = 1024

// pushed is the highest MESSAGE seq of each topic queued on one connection. A topic's pushes
// reach a connection in seq order (one consumer per topic in the deployment), so a push at or
// below that mark was queued before: the rerun of a deliver job whose consumer died after
// pushing and before marking it done, or the same push arriving both from another node's
// forward and from the consumer that took the job over (docs/NODES.md). Dropping it makes a
// live push reach each connection once although jobs are pushed at least once.
type pushed struct {
	mu   sync.Mutex
	high map[string]int64
}

// first reports whether seq of topic was never queued on this connection, and remembers it.
func (p *pushed) first(topic string, seq int64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if high, ok := p.high[topic]; ok && seq <= high {
		return false
	}
	if p.high == nil || len(p.high) >= pushedTopicsCap {
		p.high = make(map[string]int64)
	}
	p.high[topic] = seq
	return true
}

// refused undoes first for a push the connection did not take, so a repeat may try again; the
// seqs before it stay remembered.
func (p *pushed) refused(topic string, seq int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if high, ok := p.high[topic]; ok && high == seq {
		p.high[topic] = seq - 1
	}
}
