// Package seq describes one allocation of the atomic Redis script: idempotency record, topic
// seq and active month in a single step (seed 000 §3.3, DESIGN §4 step 4).
package seq

import (
	"errors"
	"time"

	"github.com/imdhq/imd/core/domain/month"
)

var (
	// ErrCounterMissing: the topic counter is gone (Redis loss); the caller re-seeds it from
	// MySQL before allocating, so seq never restarts at 1.
	ErrCounterMissing = errors.New("topic seq counter missing")
	// ErrNoActiveMonth: no month table is ready to take writes.
	ErrNoActiveMonth = errors.New("no writable month")
)

// Request asks for a seq for one (topic, sender, client_msg_id).
type Request struct {
	Topic       string
	From        int64
	ClientMsgID string
	MsgID       int64
	Hash        string // payload fingerprint, see message.Draft.Hash
	// Reallocate replaces a known record with a fresh seq; used only after the record's seq was
	// found taken in MySQL (stale counter), when nothing of it is stored.
	Reallocate bool
	// MonthOverride, when valid, replaces the Redis TIME month (tests of the month boundary).
	MonthOverride month.Month
	// Floor, when valid, is the least the active month may be (month.Floors): a present active
	// month behind it is raised to it, never lowered. A missing one still answers
	// ErrNoActiveMonth, so that it is re-seeded from the catalog itself.
	Floor month.Month
	// Attempt and PendingFor, when both are set, mark the allocated seq as still being sent by
	// this attempt, cluster-wide, for PendingFor (the send's bound) or until the attempt
	// settles it (ports.PendingSeqs): a deliver consumer on any node then waits for the seq
	// instead of delivering the ones after it first. A retry answered from an acked record
	// marks nothing: its job is queued already.
	Attempt    string
	PendingFor time.Duration
}

// Allocation is the fixed routing of one message: retries reuse it unchanged.
type Allocation struct {
	Seq   int64
	Month month.Month
	MsgID int64
	Hash  string
	// Existing: the record was there already (a retry).
	Existing bool
	// Acked: the message was stored and enqueued before; the retry can be answered at once.
	Acked bool
	// At is the instant of a fresh allocation on the allocator's clock (Redis TIME), which is
	// the clock of month switches too; zero for a retry's record. The write transaction compares
	// it with the newer months' switch instants (shard.Superseding).
	At time.Time
}

// ErrTaken: another message already holds (topic, seq) in MySQL — the counter was behind
// (e.g. Redis restored from an older AOF). The caller re-seeds and reallocates.
var ErrTaken = errors.New("seq already taken")
