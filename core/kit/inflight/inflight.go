// Package inflight tracks the sends of this node that hold an allocated seq and have not yet
// finished: stored and queued for delivery, or failed. A deliver consumer that misses a seq
// asks it before giving the seq up: a slow send (a loaded database, a long group commit) is
// waited for, a failed one is not. Another node's sends are unknown here; for them the
// consumer's short deadline stays the rule.
package inflight

import "sync"

// Sends is the set of seqs being sent per topic. The zero value is not usable; use New.
type Sends struct {
	mu     sync.Mutex
	topics map[topicKey]map[int64]int // seq → sends holding it (a retry may race its first try)
}

type topicKey struct{ tenant, topic string }

// New returns an empty set.
func New() *Sends { return &Sends{topics: make(map[topicKey]map[int64]int)} }

// Begin records that a send holds seq of topic. Every Begin needs its End.
func (s *Sends) Begin(tenant, topic string, seq int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := topicKey{tenant, topic}
	seqs := s.topics[k]
	if seqs == nil {
		seqs = make(map[int64]int)
		s.topics[k] = seqs
	}
	seqs[seq]++
}

// End records that a send holding seq finished.
func (s *Sends) End(tenant, topic string, seq int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := topicKey{tenant, topic}
	seqs := s.topics[k]
	if seqs[seq] <= 1 {
		delete(seqs, seq)
	} else {
		seqs[seq]--
	}
	if len(seqs) == 0 {
		delete(s.topics, k)
	}
}

// Any reports whether a send of a seq in [from, to] of topic is still running.
func (s *Sends) Any(tenant, topic string, from, to int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for seq := range s.topics[topicKey{tenant, topic}] {
		if seq >= from && seq <= to {
			return true
		}
	}
	return false
}
