// Package send is the send path of DESIGN §4: validate, authorize, allocate seq and month
// atomically, commit to the month table, enqueue for delivery, and only then acknowledge.
package send

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/delivery"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/route"
	"github.com/imdhq/imd/core/domain/seq"
	"github.com/imdhq/imd/core/domain/shard"
	"github.com/imdhq/imd/core/domain/social"
	"github.com/imdhq/imd/core/kit/inflight"
	"github.com/imdhq/imd/core/usecase/conversation"
	"github.com/imdhq/imd/ports"
)

// Request is one SEND_MESSAGE.
type Request struct {
	Tenant     string
	From       int64
	FromDevice uint64
	Address    conversation.Address
	MsgID      int64 // optional client pre-generated id (003 §9.2)
	Draft      message.Draft
}

// Result is what SEND_ACK reports.
type Result struct {
	Message    message.Message
	ServerTime time.Time
}

// Deps are the ports the send path uses.
type Deps struct {
	Seq   ports.SeqAllocator
	Store ports.MessageStore
	// FollowUp writes what follows a COMMIT into Redis in one round trip: the route, the hot
	// cache, the deliver job, the acked mark and the settling of the pending marks.
	FollowUp ports.CommitFollowUp
	// Queued records that a message's deliver job was queued, in the message's durable dedup
	// record: what a resend consults instead of a Redis marker that expires.
	Queued   ports.QueuedMarks
	IDs      ports.IDGenerator
	Clock    ports.Clock
	Metrics  ports.Metrics
	Resolver *conversation.Resolver
	// Media admits the key of a media message into its conversation before anything is
	// allocated (issue 33); nil admits every key of the right shape (tests).
	Media ports.MediaAdmission
	Log   *slog.Logger
	// Months is the shard manager: it prepares a tenant's months when the seq script finds
	// none writable (Redis lost its month keys) instead of waiting for its next pass, repairs
	// the active month forward from the catalog when a write collides (Redis behind the catalog
	// after a failover), and shares the month floors this process's allocations raise; nil:
	// none of that (tests).
	Months Months
	// Repairs takes topics whose route update failed after COMMIT (seed 000 §3.4 rule 2).
	Repairs ports.RouteRepairs
	// Compensation keeps writes whose fixed month is sealed (seed 000 §5.3).
	Compensation ports.CompensationList
	// Listeners hear of each stored message after COMMIT (search index, file index); they
	// never fail or hold up the send.
	Listeners []ports.CommitListener
	// InFlight learns which seqs this node is still sending, so deliver consumers wait for a
	// slow send instead of delivering the seqs after it first; nil: not tracked.
	InFlight *inflight.Sends
	// Pending is where the seq script's marks are settled: each seq this send allocated is
	// marked pending cluster-wide for Config.PendingFor, so a deliver consumer on any node
	// waits for it; the mark goes when the job is queued (FollowUp) or the send fails. Nil: no
	// marks.
	Pending ports.PendingSeqs
}

// Months is what the send path needs of the shard manager.
type Months interface {
	Ensure(ctx context.Context, tenant string) error
	Reconcile(ctx context.Context, tenant string) error
	// Floors is what this process knows the active month must be at least; allocations raise
	// a Redis behind it and raise it in turn.
	Floors() *month.Floors
}

// Config bounds the send path in time.
type Config struct {
	// MsgIDWindow bounds how far a client pre-generated id may be from now (003 §19 msgid_expire_ms).
	MsgIDWindow time.Duration
	// PendingFor is how long a seq's pending mark lives: as long as the send may (its request
	// timeout bounds every step). ≤ 0: no marks.
	PendingFor time.Duration
	// MaxDuration bounds a send whose caller set no deadline (the HTTP API): once allocating,
	// a send no longer stops when its caller goes (detach), so its own bound must. ≤ 0: only
	// the caller's deadline.
	MaxDuration time.Duration
}

// Service runs the send path.
type Service struct {
	cfg    Config
	d      Deps
	floors *month.Floors // nil without Months: no floor
}

// New returns the send service.
func New(cfg Config, d Deps) *Service {
	s := &Service{cfg: cfg, d: d}
	if d.Months != nil {
		s.floors = d.Months.Floors()
	}
	return s
}

// ErrClientMsgIDReused is the cause of the 40901 a send gets when its client_msg_id names a
// message of other content already stored, so a caller that derives the id from a change
// (issue 31's events) can tell that its change was announced before.
var ErrClientMsgIDReused = errors.New("client_msg_id reused for other content")

var errReused = apperr.Wrap(apperr.Conflict, "client_msg_id was used for a different message", ErrClientMsgIDReused)

// maxReallocations bounds re-seeding after a stale counter; more means something else is wrong.
const maxReallocations = 3

// Send runs DESIGN §4 end to end. Every failure leaves nothing acknowledged; a retry with the
// same client_msg_id converges on the same msg_id and seq.
func (s *Service) Send(ctx context.Context, r Request) (res Result, err error) {
	defer func() { s.d.Metrics.Inc("message_send_total", outcomeOf(err)) }()
	if err := r.Draft.Validate(); err != nil {
		return Result{}, err
	}
	conv, err := s.d.Resolver.ForSend(ctx, r.Tenant, r.From, r.Address, r.Draft.Type)
	if err != nil {
		return Result{}, err
	}
	if key, media := r.Draft.MediaKey(); media && s.d.Media != nil {
		if err := s.d.Media.AdmitMedia(ctx, r.Tenant, r.From, key, conv.Topic); err != nil {
			return Result{}, err
		}
	}
	return s.post(ctx, r, conv)
}

// Event is a message the server writes into a topic on a user's behalf: a topic-wide control
// event such as a recall, written once and synced like any message (DESIGN §1).
type Event struct {
	Tenant       string
	Conversation social.Conversation // already authorized by the caller
	Actor        int64               // the event's sender
	ActorDevice  uint64              // has the caller's response, so no push
	// ClientMsgID is derived from what the event is about, so a retry converges on one event.
	ClientMsgID string
	Content     json.RawMessage
}

// Publish appends an event as a `system` message through the same seq, storage and delivery
// steps as Send.
func (s *Service) Publish(ctx context.Context, e Event) (Result, error) {
	r := Request{
		Tenant: e.Tenant, From: e.Actor, FromDevice: e.ActorDevice,
		Draft: message.Draft{ClientMsgID: e.ClientMsgID, Type: "system", Content: e.Content},
	}
	if err := r.Draft.Validate(); err != nil {
		return Result{}, fmt.Errorf("event %s in %s: %w", e.ClientMsgID, e.Conversation.Topic, err)
	}
	return s.post(ctx, r, e.Conversation)
}

// post runs DESIGN §4 from step 3 for a validated draft in an authorized conversation.
func (s *Service) post(ctx context.Context, r Request, conv social.Conversation) (Result, error) {
	ctx, cancel := s.detach(ctx)
	defer cancel()
	msgID, err := s.msgID(r.MsgID)
	if err != nil {
		return Result{}, err
	}
	hash := r.Draft.Hash()
	req := seq.Request{Topic: conv.Topic, From: r.From, ClientMsgID: r.Draft.ClientMsgID, MsgID: msgID, Hash: hash}

	// Every seq this send holds is in flight until the send returns: queued, or failed.
	var held []int64
	if s.d.InFlight != nil {
		defer func() {
			for _, n := range held {
				s.d.InFlight.End(r.Tenant, conv.Topic, n)
			}
		}()
	}
	var pendingAttempt string
	settled := false // the follow-up after COMMIT has settled the marks, or tried to
	if s.marks() {
		pendingAttempt, err = s.attemptID(msgID, r.MsgID)
		if err != nil {
			return Result{}, err
		}
		req.Attempt, req.PendingFor = pendingAttempt, s.cfg.PendingFor
		defer func() {
			if !settled { // failed: the seqs it marked will never be queued by this attempt
				s.settle(context.WithoutCancel(ctx), r.Tenant, conv.Topic, pendingAttempt, held)
			}
		}()
	}
	for range maxReallocations {
		alloc, err := s.allocate(ctx, r.Tenant, req)
		if err != nil {
			return Result{}, err
		}
		if s.d.InFlight != nil || s.marks() {
			held = append(held, alloc.Seq)
		}
		if s.d.InFlight != nil {
			s.d.InFlight.Begin(r.Tenant, conv.Topic, alloc.Seq)
		}
		if alloc.Existing {
			s.d.Metrics.Inc("group_message_dedup_hit_total")
			if alloc.Hash != hash {
				return Result{}, errReused
			}
		}
		m := message.Message{
			Topic: conv.Topic, GroupID: conv.GroupID, ConversationID: conv.ID,
			Seq: alloc.Seq, MsgID: alloc.MsgID, From: r.From,
			ClientMsgID: r.Draft.ClientMsgID, Type: r.Draft.Type, Content: r.Draft.Content,
			Mentions: r.Draft.Mentions, MentionAll: r.Draft.MentionAll, ReplySeq: r.Draft.ReplySeq,
			Status: message.StatusNormal, Version: 1, CreatedAt: s.d.Clock.Now().UTC().Truncate(time.Millisecond),
			Month: alloc.Month,
		}
		started := s.d.Clock.Now()
		var res ports.AppendResult
		if alloc.Existing { // a month fixed before: maybe a late write (seed 000 §5.3)
			res, err = s.d.Store.Append(ctx, r.Tenant, m, hash)
		} else {
			res, err = s.d.Store.AppendFresh(ctx, r.Tenant, m, hash, alloc.At)
		}
		var behind *shard.BehindError
		switch {
		case errors.Is(err, seq.ErrTaken):
			// The seq is stored already: the sweeper's tombstone of a send it gave up on, or a
			// Redis counter behind MySQL after a failover or restart that lost writes (DESIGN
			// §1.13), whose lists may then count unread short. Logged for operators: the re-seed
			// puts the counter right, so a rollback says it about once per topic.
			s.d.Log.WarnContext(ctx, "seq already stored, re-seeding the counter from MySQL",
				"tenant", r.Tenant, "topic", conv.Topic, "seq", m.Seq)
			if err := s.reseed(ctx, r.Tenant, conv.Topic); err != nil {
				return Result{}, err
			}
			s.reconcileMonths(ctx, r.Tenant)
			req.Reallocate = true
			continue
		case errors.As(err, &behind):
			// Redis handed out a month it had already switched past at the allocation (a
			// failover that lost the switch, which this process never saw): nothing was written,
			// so the seq is a hole for the sweeper, and the message is allocated again with the
			// newer month as its floor, which also moves Redis forward for every node.
			s.d.Metrics.Inc("group_message_persist_total", m.Month.String(), "failed")
			s.floors.Raise(r.Tenant, behind.Newer)
			req.Reallocate = true
			continue
		case errors.Is(err, shard.ErrMonthNotWritable):
			s.d.Metrics.Inc("group_message_persist_total", m.Month.String(), "failed")
			s.compensate(ctx, r.Tenant, m, hash, err)
			return Result{}, apperr.Wrap(apperr.Busy, "message month no longer takes writes, kept for compensation", err)
		case errors.Is(err, shard.ErrMonthMissing):
			s.d.Metrics.Inc("group_message_persist_total", m.Month.String(), "failed")
			s.d.Metrics.Inc("group_message_shard_missing_total")
			return Result{}, apperr.Wrap(apperr.Busy, "message storage unavailable, retry", err)
		case err != nil:
			s.d.Metrics.Inc("group_message_persist_total", m.Month.String(), "failed")
			return Result{}, apperr.Wrap(apperr.Busy, "message storage unavailable, retry", err)
		}
		s.d.Metrics.Observe("group_message_persist_latency", s.d.Clock.Now().Sub(started).Seconds())
		s.d.Metrics.Inc("group_message_persist_total", m.Month.String(), "ok")

		attempt := m
		switch res.Outcome {
		case ports.AlreadyStored:
			m = res.Existing
		case ports.DuplicateClientMsgID:
			s.d.Metrics.Inc("group_message_dedup_hit_total")
			if res.Hash != hash {
				return Result{}, errReused
			}
			m = res.Existing
		}
		// One round trip writes what follows the COMMIT into Redis. The route and the hot cache
		// describe what MySQL holds, so they follow it whatever happens to the enqueue.
		f := ports.FollowUp{Acked: &ports.AckedMark{Topic: m.Topic, From: m.From, ClientMsgID: m.ClientMsgID}}
		if res.Outcome != ports.AlreadyStored {
			// A duplicate's attempt left a tombstone at its seq: the route covers it too.
			u := routeUpdateOf(attempt)
			f.Route = &u
		}
		if res.Outcome != ports.DuplicateClientMsgID {
			// A retry caches too: it heals a write lost with the first attempt.
			f.Hot = &m
		}
		// Deliver-once rests on the dedup record (DESIGN §11): the job is queued by the send
		// that committed the message, or by a resend while the record does not say it was
		// queued. A crash between COMMIT and the enqueue leaves the record unmarked and the
		// sender without an ACK: its resend queues the job, once. A crash between the enqueue
		// and the mark leaves a queued job and an unmarked record: the resend queues it again,
		// marked resent, and the deliver worker pushes that job only if no job of the message
		// is marked done, or, past deliver.done_ttl, only if the lists have not gone past it
		// (a device that reconnected in between has a connection that drops nothing). The
		// mark is awaited before the ACK, and a failed mark withholds it (50301): an ACKed
		// message is never queued again, and the resend that the missing ACK brings comes
		// while the done marker still drops its second job.
		if res.Outcome == ports.Stored || !res.Queued {
			job := delivery.Job{
				Tenant: r.Tenant, Kind: delivery.KindMessage, MsgID: m.MsgID, Topic: m.Topic,
				ConversationID: m.ConversationID, From: m.From, ExcludeDevice: r.FromDevice, Message: &m,
				Resent: res.Outcome != ports.Stored,
			}
			f.Job = &job
		}
		if s.marks() {
			// Once queued (or queued before, for a resend), the marks may go: the follow-up
			// settles them only after its job, if any, is queued (ports.CommitFollowUp).
			f.Settle = &ports.PendingSettle{Topic: conv.Topic, Attempt: pendingAttempt, Seqs: held}
		}
		started = s.d.Clock.Now()
		out := s.d.FollowUp.Apply(ctx, r.Tenant, f)
		if out.Route != nil {
			s.routeNotUpdated(ctx, r.Tenant, attempt, out.Route)
		}
		if out.Hot != nil {
			// Readers use the cache only where it covers a page whole, so a failed write costs a
			// MySQL read, never a wrong answer.
			s.d.Metrics.Inc("group_message_hot_cache_write_failed_total")
			s.d.Log.WarnContext(ctx, "hot cache write failed", "topic", m.Topic, "seq", m.Seq, "err", out.Hot)
		}
		if f.Job != nil {
			// The last step before SEND_ACK (seed 003 C5): without it there is no ACK.
			if out.Job != nil {
				return Result{}, apperr.Wrap(apperr.Busy, "deliver queue unavailable, retry", out.Job)
			}
			s.d.Metrics.Observe("enqueue_latency", s.d.Clock.Now().Sub(started).Seconds())
		}
		settled = true
		// The acked mark and the settle only save work: the record answers retries with the same
		// seq either way, and a mark left behind expires at its deadline.
		if out.Acked != nil {
			s.d.Log.WarnContext(ctx, "mark acked failed", "topic", m.Topic, "msg_id", m.MsgID, "err", out.Acked)
		}
		if out.Settle != nil {
			for _, n := range held {
				s.warnUnsettled(ctx, r.Tenant, conv.Topic, n, out.Settle)
			}
		}
		if f.Job != nil {
			if err := s.markQueued(ctx, r.Tenant, m); err != nil {
				return Result{}, apperr.Wrap(apperr.Busy, "message queued but not yet recorded as queued, retry", err)
			}
		}
		if res.Outcome != ports.DuplicateClientMsgID {
			for _, l := range s.d.Listeners {
				l.Committed(ctx, r.Tenant, m)
			}
		}
		return Result{Message: m, ServerTime: s.d.Clock.Now()}, nil
	}
	return Result{}, apperr.New(apperr.Busy, "seq allocation kept colliding, retry")
}

// detach is the context of a send from its allocation on: the caller's values and deadline,
// not its cancellation. A client that disconnects, or a node that begins to shut down,
// between the allocation and SEND_ACK must not cancel the COMMIT, its follow-up or the queued
// mark halfway: a cancelled mark leaves a message stored and queued whose record says it is
// not, and its resend queues it again (issue 34). Finished, the send answers a caller that is
// gone; its seqs are settled either way.
func (s *Service) detach(ctx context.Context) (context.Context, context.CancelFunc) {
	detached := context.WithoutCancel(ctx)
	if deadline, ok := ctx.Deadline(); ok {
		return context.WithDeadline(detached, deadline)
	}
	if s.cfg.MaxDuration > 0 {
		return context.WithTimeout(detached, s.cfg.MaxDuration)
	}
	return detached, func() {}
}

// marks reports whether allocations mark their seqs pending (Deps.Pending).
func (s *Service) marks() bool { return s.d.Pending != nil && s.cfg.PendingFor > 0 }

// attemptID names this send attempt's pending marks: unique per attempt, so a failing attempt
// never settles the mark of a retry racing it. A server-issued msg_id is unique already; a
// client pre-generated one is shared by its retries.
func (s *Service) attemptID(msgID, clientMsgID int64) (string, error) {
	if msgID != clientMsgID {
		return strconv.FormatInt(msgID, 10), nil
	}
	id, err := s.d.IDs.NextID()
	if err != nil {
		return "", apperr.Wrap(apperr.Busy, "id generation failed", err)
	}
	return strconv.FormatInt(id, 10), nil
}

// settle removes the marks of an attempt that failed; a failure only leaves them to their
// deadline.
func (s *Service) settle(ctx context.Context, tenant, topic, attempt string, seqs []int64) {
	for _, n := range seqs {
		if err := s.d.Pending.Settle(ctx, tenant, topic, n, attempt); err != nil {
			s.warnUnsettled(ctx, tenant, topic, n, err)
		}
	}
}

func (s *Service) warnUnsettled(ctx context.Context, tenant, topic string, seqNo int64, err error) {
	s.d.Log.WarnContext(ctx, "pending seq mark not settled", "tenant", tenant, "topic", topic, "seq", seqNo, "err", err)
}

// msgID accepts a client pre-generated id within the window, else issues a new one (003 §9.2).
func (s *Service) msgID(clientID int64) (int64, error) {
	if clientID > 0 {
		at := s.d.IDs.TimeOf(clientID)
		if d := s.d.Clock.Now().Sub(at); d <= s.cfg.MsgIDWindow && d >= -s.cfg.MsgIDWindow {
			return clientID, nil
		}
	}
	id, err := s.d.IDs.NextID()
	if err != nil {
		return 0, apperr.Wrap(apperr.Busy, "id generation failed", err)
	}
	return id, nil
}

// allocate runs the seq script, re-seeding a lost counter from MySQL (DESIGN §1) and preparing
// the months when Redis lost them, each at most once.
func (s *Service) allocate(ctx context.Context, tenant string, req seq.Request) (seq.Allocation, error) {
	reseeded, ensured := false, false
	for {
		req.Floor = s.floors.Of(tenant)
		alloc, err := s.d.Seq.Allocate(ctx, tenant, req)
		switch {
		case err == nil:
			if !alloc.Existing {
				s.floors.Raise(tenant, alloc.Month)
			}
			return alloc, nil
		case errors.Is(err, seq.ErrCounterMissing) && !reseeded:
			reseeded = true
			if err := s.reseed(ctx, tenant, req.Topic); err != nil {
				return seq.Allocation{}, err
			}
		case errors.Is(err, seq.ErrNoActiveMonth) && !ensured && s.d.Months != nil:
			ensured = true
			if ensureErr := s.d.Months.Ensure(ctx, tenant); ensureErr != nil {
				s.d.Log.ErrorContext(ctx, "no writable month and preparing one failed", "tenant", tenant, "err", ensureErr)
			}
		case errors.Is(err, seq.ErrNoActiveMonth):
			return seq.Allocation{}, apperr.Wrap(apperr.Busy, "no writable month, retry", err)
		default:
			return seq.Allocation{}, apperr.Wrap(apperr.Busy, "seq allocation unavailable, retry", err)
		}
	}
}

// reconcileMonths repairs a stale active month before the next allocation; a failure is only
// logged: the shard manager's next pass repairs it too, and the send answers 50301 meanwhile.
func (s *Service) reconcileMonths(ctx context.Context, tenant string) {
	if s.d.Months == nil {
		return
	}
	if err := s.d.Months.Reconcile(ctx, tenant); err != nil {
		s.d.Log.WarnContext(ctx, "active month repair failed", "tenant", tenant, "err", err)
	}
}

func (s *Service) reseed(ctx context.Context, tenant, topic string) error {
	floor, err := s.d.Store.MaxSeq(ctx, tenant, topic)
	if err != nil {
		return apperr.Wrap(apperr.Busy, "seq re-seed unavailable, retry", fmt.Errorf("max seq of %s: %w", topic, err))
	}
	if err := s.d.Seq.Reseed(ctx, tenant, topic, floor); err != nil {
		return apperr.Wrap(apperr.Busy, "seq re-seed unavailable, retry", err)
	}
	return nil
}

// outcomeOf is the status label of message_send_total: "ok", or the contract code the sender
// got (PROTOCOL §5), so a dashboard tells refusals (4xxxx) from server trouble (5xxxx).
func outcomeOf(err error) string {
	if err == nil {
		return "ok"
	}
	return strconv.Itoa(int(apperr.CodeOf(err)))
}

// markQueued records in the dedup record that the job is queued. On failure the message is
// stored and queued but the record does not say so: the send answers 50301, and its resend
// queues the job again, which the deliver worker's done marker absorbs within its TTL.
func (s *Service) markQueued(ctx context.Context, tenant string, m message.Message) error {
	if s.d.Queued == nil {
		return nil
	}
	if err := s.d.Queued.MarkQueued(ctx, tenant, m.Topic, m.From, m.ClientMsgID); err != nil {
		s.d.Log.WarnContext(ctx, "mark queued failed", "topic", m.Topic, "msg_id", m.MsgID, "err", err)
		return fmt.Errorf("mark %d queued: %w", m.MsgID, err)
	}
	return nil
}

// routeUpdateOf is the route update of one committed message.
func routeUpdateOf(m message.Message) ports.RouteUpdate {
	return ports.RouteUpdate{Topic: m.Topic, Segment: route.Segment{
		Month: m.Month, MinSeq: m.Seq, MaxSeq: m.Seq, Count: 1, MinCreatedAt: m.CreatedAt, MaxCreatedAt: m.CreatedAt,
	}}
}

// routeNotUpdated queues the topic's route for repair: a failed route update never rolls back
// the message (seed 000 §3.4 rule 2), readers fall back to the MySQL mirror meanwhile.
func (s *Service) routeNotUpdated(ctx context.Context, tenant string, m message.Message, err error) {
	s.d.Log.WarnContext(ctx, "route update failed, queued for repair", "topic", m.Topic, "seq", m.Seq, "err", err)
	if err := s.d.Repairs.Enqueue(ctx, tenant, m.Topic); err != nil {
		s.d.Log.ErrorContext(ctx, "route repair not queued", "topic", m.Topic, "seq", m.Seq, "err", err)
	}
}

// compensate keeps a write whose fixed month was sealed: the month's table no longer takes it,
// and writing it to another month would break the topic's month segments, so it waits on the
// compensation list for an operator (seed 000 §5.3). The sender gets 50301 and keeps the
// message; its retries find it listed already.
func (s *Service) compensate(ctx context.Context, tenant string, m message.Message, hash string, cause error) {
	added, err := s.d.Compensation.Push(ctx, tenant, ports.Compensation{
		Message: m, Hash: hash, Reason: cause.Error(), At: s.d.Clock.Now().UTC(),
	})
	if err != nil {
		s.d.Log.ErrorContext(ctx, "late write into a sealed month not listed for compensation",
			"topic", m.Topic, "seq", m.Seq, "month", m.Month.String(), "msg_id", m.MsgID, "err", err)
		return
	}
	if added {
		s.d.Metrics.Inc("group_message_dead_letter_total")
		s.d.Log.ErrorContext(ctx, "late write into a sealed month listed for compensation",
			"topic", m.Topic, "seq", m.Seq, "month", m.Month.String(), "msg_id", m.MsgID)
	}
}
