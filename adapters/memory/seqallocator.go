// Package memory holds in-memory fakes of the ports. Each follows the rules of its real
// adapter and passes the same contract suite (ports/contract), so tests on fakes stay honest.
package memory

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/seq"
	"github.com/imdhq/imd/core/domain/tenant"
	"github.com/imdhq/imd/core/domain/topic"
	"github.com/imdhq/imd/ports"
)

// idemTTL matches the Redis adapter's default lifetime of an idempotency record.
const idemTTL = 24 * time.Hour

// SeqAllocator is an in-memory ports.SeqAllocator: the same steps as the Redis script, made
// atomic by one mutex.
type SeqAllocator struct {
	months *MonthState
	clock  func() time.Time

	mu       sync.Mutex
	counters map[tenantTopic]int64
	records  map[idemKey]idemRecord
	pending  map[pendingKey]time.Time // deadline of each attempt's mark
}

var (
	_ ports.SeqAllocator = (*SeqAllocator)(nil)
	_ ports.PendingSeqs  = (*SeqAllocator)(nil)
)

type pendingKey struct {
	tenantTopic
	seq     int64
	attempt string
}

type tenantTopic struct{ tenant, topic string }

type idemKey struct {
	tenantTopic
	from        int64
	clientMsgID string
}

type idemRecord struct {
	alloc   seq.Allocation // Existing and Acked unset
	acked   bool
	expires time.Time
}

// NewSeqAllocator returns an allocator reading and advancing ms; clock expires idempotency
// records.
func NewSeqAllocator(ms *MonthState, clock func() time.Time) *SeqAllocator {
	return &SeqAllocator{months: ms, clock: clock, counters: map[tenantTopic]int64{}, records: map[idemKey]idemRecord{}, pending: map[pendingKey]time.Time{}}
}

// Allocate follows the Redis script: known record → it; no counter → ErrCounterMissing; no
// active month → ErrNoActiveMonth; else the next seq, recorded.
func (s *SeqAllocator) Allocate(_ context.Context, name string, req seq.Request) (seq.Allocation, error) {
	tk, err := validTenantTopic(name, req.Topic)
	if err != nil {
		return seq.Allocation{}, fmt.Errorf("allocate seq: %w", err)
	}
	if req.ClientMsgID == "" || req.MsgID <= 0 {
		return seq.Allocation{}, fmt.Errorf("allocate seq for %s: client_msg_id and msg_id are required", req.Topic)
	}
	if req.MonthOverride != 0 && !req.MonthOverride.Valid() {
		return seq.Allocation{}, fmt.Errorf("allocate seq for %s: %w: override %d", req.Topic, month.ErrInvalid, req.MonthOverride)
	}
	if req.Floor != 0 && !req.Floor.Valid() {
		return seq.Allocation{}, fmt.Errorf("allocate seq for %s: %w: floor %d", req.Topic, month.ErrInvalid, req.Floor)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ik := idemKey{tenantTopic: tk, from: req.From, clientMsgID: req.ClientMsgID}
	next := seq.Allocation{MsgID: req.MsgID, Hash: req.Hash}
	if rec, ok := s.records[ik]; ok && s.clock().Before(rec.expires) {
		if !req.Reallocate {
			a := rec.alloc
			a.Existing, a.Acked = true, rec.acked
			if !rec.acked {
				s.mark(tk, a.Seq, req)
			}
			return a, nil
		}
		next.MsgID, next.Hash = rec.alloc.MsgID, rec.alloc.Hash
	}
	counter, ok := s.counters[tk]
	if !ok {
		return seq.Allocation{}, fmt.Errorf("allocate seq for %s in %s: %w", req.Topic, name, seq.ErrCounterMissing)
	}
	next.Month = s.months.activeFor(name, req.Topic, req.MonthOverride, req.Floor)
	if next.Month == 0 {
		return seq.Allocation{}, fmt.Errorf("allocate seq for %s in %s: %w", req.Topic, name, seq.ErrNoActiveMonth)
	}
	next.Seq = counter + 1
	s.counters[tk] = next.Seq
	s.records[ik] = idemRecord{alloc: next, expires: s.clock().Add(idemTTL)}
	s.mark(tk, next.Seq, req)
	// Only a fresh allocation carries its instant, in the script's milliseconds.
	next.At = s.clock().UTC().Truncate(time.Millisecond)
	return next, nil
}

// mark records the attempt's pending mark, as the Redis script does; the caller holds mu.
func (s *SeqAllocator) mark(tk tenantTopic, n int64, req seq.Request) {
	if req.Attempt == "" || req.PendingFor <= 0 {
		return
	}
	now := s.clock()
	for k, deadline := range s.pending {
		if !now.Before(deadline) {
			delete(s.pending, k)
		}
	}
	s.pending[pendingKey{tenantTopic: tk, seq: n, attempt: req.Attempt}] = now.Add(req.PendingFor)
}

// Pending reports an unexpired mark in [from, to]; see ports.PendingSeqs.
func (s *SeqAllocator) Pending(_ context.Context, name, topicName string, from, to int64) (bool, error) {
	tk, err := validTenantTopic(name, topicName)
	if err != nil {
		return false, fmt.Errorf("pending seqs: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock()
	for k, deadline := range s.pending {
		if k.tenantTopic == tk && k.seq >= from && k.seq <= to && now.Before(deadline) {
			return true, nil
		}
	}
	return false, nil
}

// Settle removes one attempt's mark; see ports.PendingSeqs.
func (s *SeqAllocator) Settle(_ context.Context, name, topicName string, n int64, attempt string) error {
	tk, err := validTenantTopic(name, topicName)
	if err != nil {
		return fmt.Errorf("settle seq: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.pending, pendingKey{tenantTopic: tk, seq: n, attempt: attempt})
	return nil
}

// Reseed raises the counter to at least floor.
func (s *SeqAllocator) Reseed(_ context.Context, name, topicName string, floor int64) error {
	tk, err := validTenantTopic(name, topicName)
	if err != nil {
		return fmt.Errorf("reseed: %w", err)
	}
	if floor < 0 {
		return fmt.Errorf("reseed %s: negative floor %d", topicName, floor)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur, ok := s.counters[tk]; !ok || cur < floor {
		s.counters[tk] = floor
	}
	return nil
}

// MarkAcked flags a live record, the acked part of a commit follow-up (ports.FollowUp.Acked);
// a missing or expired one is not recreated.
func (s *SeqAllocator) MarkAcked(_ context.Context, name, topicName string, from int64, clientMsgID string) error {
	tk, err := validTenantTopic(name, topicName)
	if err != nil {
		return fmt.Errorf("mark acked: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ik := idemKey{tenantTopic: tk, from: from, clientMsgID: clientMsgID}
	if rec, ok := s.records[ik]; ok && s.clock().Before(rec.expires) {
		rec.acked = true
		s.records[ik] = rec
	}
	return nil
}

// validTenantTopic applies the Redis adapter's key validation.
func validTenantTopic(name, topicName string) (tenantTopic, error) {
	if !tenant.Valid(name) {
		return tenantTopic{}, fmt.Errorf("invalid tenant %q", name)
	}
	if _, err := topic.Parse(topicName); err != nil {
		return tenantTopic{}, err
	}
	return tenantTopic{tenant: name, topic: topicName}, nil
}

// Forget drops every counter and record of a tenant, as a Redis FLUSHALL would.
func (s *SeqAllocator) Forget(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	maps.DeleteFunc(s.counters, func(k tenantTopic, _ int64) bool { return k.tenant == name })
	maps.DeleteFunc(s.records, func(k idemKey, _ idemRecord) bool { return k.tenant == name })
	maps.DeleteFunc(s.pending, func(k pendingKey, _ time.Time) bool { return k.tenant == name })
}

// ForceCounter sets a topic counter to v, even lower, as restoring an older AOF would.
func (s *SeqAllocator) ForceCounter(name, topicName string, v int64) error {
	tk, err := validTenantTopic(name, topicName)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.counters[tk] = v
	s.mu.Unlock()
	return nil
}
