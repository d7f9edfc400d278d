package ports

import (
	"context"
	"errors"

	"github.com/imdhq/imd/core/domain/delivery"
	"github.com/imdhq/imd/core/domain/message"
)

// CommitListener hears of every message the send path stored and acknowledged, after COMMIT
// (seed 000 §6.6: the search index is fed after the write). It must return quickly and its
// failures are its own: a send never fails or waits because of a listener.
type CommitListener interface {
	Committed(ctx context.Context, tenant string, m message.Message)
}

// CommitFollowUp writes what follows a message's COMMIT into Redis in one round trip (DESIGN
// §4 step 6): the route update, the hot-cache entry, the deliver job, the acked mark of the
// idempotency record and the settling of the send's pending marks. Every key of a tenant
// carries its hash tag, so one script can hold them all, also on Redis Cluster.
type CommitFollowUp interface {
	// Apply writes the parts f holds and reports each one's outcome: the parts fail
	// independently, except that Acked and Settle follow a successful Job (a failed Job
	// leaves them ErrNotAttempted). When the call as a whole fails (Redis unreachable),
	// every part f holds reports that error.
	Apply(ctx context.Context, tenant string, f FollowUp) FollowUpResult
}

// FollowUp is what one send writes after COMMIT; a nil part is not written.
type FollowUp struct {
	// Route merges the committed seq into the topic's cached route (RouteCache.Apply).
	Route *RouteUpdate
	// Hot caches the committed message in the HotCache, replacing any entry with the same seq,
	// then trims the topic to the window before this message and to the count cap (oldest seqs
	// first, so what stays is contiguous) and restarts the topic's expiry. A seq past
	// MaxHotSeq is not cached and is no error (Cacheable).
	Hot *message.Message
	// Job queues the message for delivery (DeliverQueue.Push), as a job of the call's tenant.
	Job *delivery.Job
	// Acked flags the SeqAllocator's idempotency record as stored and queued, so a retry is
	// answered at once; a missing or expired record is not recreated.
	Acked *AckedMark
	// Settle removes the send attempt's pending marks (PendingSeqs.Settle, per seq).
	Settle *PendingSettle
}

// AckedMark names the idempotency record of one send: (topic, from, client_msg_id).
type AckedMark struct {
	Topic       string
	From        int64
	ClientMsgID string
}

// PendingSettle is one send attempt's pending marks of seqs of one topic.
type PendingSettle struct {
	Topic   string
	Attempt string
	Seqs    []int64
}

// FollowUpResult is the outcome of each part of a FollowUp: nil when it was written or absent.
type FollowUpResult struct {
	Route, Hot, Job, Acked, Settle error
}

// ErrNotAttempted is the outcome of Acked and Settle when the Job of the same FollowUp failed:
// a record flagged acked or a mark settled before the job is queued would be a lie.
var ErrNotAttempted = errors.New("not attempted: the deliver job was not queued")

// Failed is the outcome of a FollowUp none of whose parts could be written, err for each one f
// holds: what a whole call that failed reports.
func (f FollowUp) Failed(err error) FollowUpResult {
	var r FollowUpResult
	if f.Route != nil {
		r.Route = err
	}
	if f.Hot != nil {
		r.Hot = err
	}
	if f.Job != nil {
		r.Job = err
	}
	if f.Acked != nil {
		r.Acked = err
	}
	if f.Settle != nil {
		r.Settle = err
	}
	return r
}
