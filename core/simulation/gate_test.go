package simulation

import (
	"context"
	"errors"
	"time"

	"github.com/imdhq/imd/core/domain/auth"
	"github.com/imdhq/imd/core/domain/delivery"
	"github.com/imdhq/imd/core/domain/dialog"
	"github.com/imdhq/imd/core/domain/mailbox"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/route"
	"github.com/imdhq/imd/core/domain/seq"
	"github.com/imdhq/imd/core/domain/shard"
	"github.com/imdhq/imd/core/domain/social"
	"github.com/imdhq/imd/core/usecase/conversation"
	"github.com/imdhq/imd/ports"
)

// backend is what a port call goes to: an outage takes all calls of one backend down.
type backend int

const (
	mysqlBackend backend = iota
	redisBackend
)

var (
	errCrashed = errors.New("sim: node crashed")
	errMySQL   = errors.New("sim: mysql unreachable")
	errRedis   = errors.New("sim: redis unreachable")
)

// gate stands between one node's use cases and the shared fakes. A crash armed for a step
// fires at the n-th call of one method: that call and every later call of the node fail and
// change nothing, as if the process had died there; the simulator then reboots the node.
type gate struct {
	w       *world
	crashed bool
	// armed: crash before the n-th call of method during the current step.
	method string
	n      int
	seen   int
	// sawMonth is the newest month this process allocated in or advanced to: the open defect
	// of the month floor (openDefects) is about a node that saw no switch, never about one that did.
	sawMonth month.Month
	// fresh is the last allocation the seq script made anew for this process (not one an
	// idempotency record gave back): its append must not land behind a month seen active
	// before it (model.storedBehind).
	fresh freshAllocation
	// beforeAppend, when set, runs once just before the next AppendFresh of this process: a
	// switch in flight between a send's allocation and its write (kSendAcrossSwitch), which
	// must not refuse the write.
	beforeAppend func()
	// failParts, when set, fails those parts of the next commit follow-up (kFollowUpFault).
	failParts followUpParts
}

type freshAllocation struct {
	topic string
	seq   int64
	month month.Month
	at    time.Time
}

// pass is called first by every wrapped port method.
func (g *gate) pass(b backend, method string) error {
	g.w.mu.Lock()
	defer g.w.mu.Unlock()
	g.w.stats.calls++
	if g.crashed {
		return errCrashed
	}
	if g.method == method {
		g.seen++
		if g.seen == g.n {
			g.crashed = true
			g.w.stats.faults++
			g.w.trace("crash at %s #%d", method, g.n)
			return errCrashed
		}
	}
	switch {
	case b == mysqlBackend && g.w.mysqlDown:
		return errMySQL
	case b == redisBackend && g.w.redisDown:
		return errRedis
	}
	return nil
}

// passGroup is pass for a call on the keys of one slot group (DESIGN §11): it fails too while
// the master that holds the group's slot is down (kGroupOutage).
func (g *gate) passGroup(method string, group int) error {
	if err := g.pass(redisBackend, method); err != nil {
		return err
	}
	if g.w.groupIsDown(group) {
		return errRedis
	}
	return nil
}

// passTopic is passGroup for a call on a topic's keys, which lie in its slot group.
func (g *gate) passTopic(method, topic string) error {
	return g.passGroup(method, g.w.months.GroupOf(topic))
}

// The wrappers below gate every method of the ports the nodes use.

type gatedSeq struct {
	ports.SeqAllocator
	g *gate
}

func (s gatedSeq) Allocate(ctx context.Context, tenant string, req seq.Request) (seq.Allocation, error) {
	if err := s.g.passTopic("Seq.Allocate", req.Topic); err != nil {
		return seq.Allocation{}, err
	}
	a, err := s.SeqAllocator.Allocate(ctx, tenant, req)
	if err == nil && !a.Existing {
		s.g.w.model.allocated(s.g.w, s.g, a)
		s.g.fresh = freshAllocation{req.Topic, a.Seq, a.Month, a.At}
	}
	return a, err
}

func (s gatedSeq) Reseed(ctx context.Context, tenant, topic string, floor int64) error {
	if err := s.g.passTopic("Seq.Reseed", topic); err != nil {
		return err
	}
	return s.SeqAllocator.Reseed(ctx, tenant, topic, floor)
}

// storePorts is the memory message store in all the roles the nodes read it in.
type storePorts interface {
	ports.MessageStore
	ports.MessageFinder
	ports.QueuedMarks
}

type gatedStore struct {
	storePorts
	g *gate
}

func (s gatedStore) Append(ctx context.Context, tenant string, m message.Message, hash string) (ports.AppendResult, error) {
	if err := s.g.pass(mysqlBackend, "Store.Append"); err != nil {
		return ports.AppendResult{}, err
	}
	res, err := s.storePorts.Append(ctx, tenant, m, hash)
	s.stored(m, res, err)
	return res, err
}

func (s gatedStore) AppendFresh(ctx context.Context, tenant string, m message.Message, hash string, at time.Time) (ports.AppendResult, error) {
	if err := s.g.pass(mysqlBackend, "Store.Append"); err != nil {
		return ports.AppendResult{}, err
	}
	f := s.g.beforeAppend
	if f != nil {
		s.g.beforeAppend = nil
		f()
	}
	res, err := s.storePorts.AppendFresh(ctx, tenant, m, hash, at)
	// Refusing a stale allocation (one after a month seen active) is right, also here.
	if f != nil && errors.Is(err, shard.ErrMonthBehind) && s.g.w.model.storedBehind(m.Month, at) == 0 {
		s.g.w.model.violate("%s seq %d, allocated in %s before a switch and written after it, was refused: %v", m.Topic, m.Seq, m.Month, err)
	}
	s.stored(m, res, err)
	return res, err
}

// stored sees an append's outcome: what it committed, and that no seq the seq script just
// allocated became a new row in a month older than one seen active before the allocation
// (whichever of Append and AppendFresh the send used for it).
func (s gatedStore) stored(m message.Message, res ports.AppendResult, err error) {
	if err != nil {
		return
	}
	f := s.g.fresh
	if f.topic == m.Topic && f.seq == m.Seq && f.month == m.Month && res.Outcome != ports.AlreadyStored {
		if newer := s.g.w.model.storedBehind(m.Month, f.at); newer != 0 {
			s.g.w.model.violate("active month moved back: %s seq %d allocated in %s at %s was stored, though %s was active since %s",
				m.Topic, m.Seq, m.Month, f.at.Format(time.RFC3339Nano), newer, s.g.w.model.activeSeen[newer].Format(time.RFC3339Nano))
		}
	}
	if res.Outcome == ports.Stored {
		s.g.w.model.storedAt[m.MsgID] = s.g.w.stats.steps
		if k := (sendKey{m.Topic, m.From, m.ClientMsgID}); s.g.w.model.firstStored[k].IsZero() {
			s.g.w.model.firstStored[k] = s.g.w.clock.Now()
		}
	}
}

func (s gatedStore) MaxSeq(ctx context.Context, tenant, topic string) (int64, error) {
	if err := s.g.pass(mysqlBackend, "Store.MaxSeq"); err != nil {
		return 0, err
	}
	return s.storePorts.MaxSeq(ctx, tenant, topic)
}

func (s gatedStore) Segments(ctx context.Context, tenant, topic string) (route.Route, error) {
	if err := s.g.pass(mysqlBackend, "Store.Segments"); err != nil {
		return nil, err
	}
	return s.storePorts.Segments(ctx, tenant, topic)
}

func (s gatedStore) Get(ctx context.Context, tenant string, m month.Month, topic string, sq int64) (message.Message, error) {
	if err := s.g.pass(mysqlBackend, "Store.Get"); err != nil {
		return message.Message{}, err
	}
	return s.storePorts.Get(ctx, tenant, m, topic, sq)
}

func (s gatedStore) Page(ctx context.Context, tenant string, m month.Month, q message.PageQuery) ([]message.Message, error) {
	if err := s.g.pass(mysqlBackend, "Store.Page"); err != nil {
		return nil, err
	}
	return s.storePorts.Page(ctx, tenant, m, q)
}

func (s gatedStore) MarkQueued(ctx context.Context, tenant, topic string, from int64, clientMsgID string) error {
	if err := s.g.pass(mysqlBackend, "Store.MarkQueued"); err != nil {
		return err
	}
	return s.storePorts.MarkQueued(ctx, tenant, topic, from, clientMsgID)
}

func (s gatedStore) FindByID(ctx context.Context, tenant string, m month.Month, msgID int64) (message.Message, error) {
	if err := s.g.pass(mysqlBackend, "Store.FindByID"); err != nil {
		return message.Message{}, err
	}
	return s.storePorts.FindByID(ctx, tenant, m, msgID)
}

type gatedRoutes struct {
	ports.RouteFiller
	g *gate
}

func (r gatedRoutes) Segments(ctx context.Context, tenant, topic string) (route.Route, bool, error) {
	if err := r.g.passTopic("Routes.Segments", topic); err != nil {
		return nil, false, err
	}
	return r.RouteFiller.Segments(ctx, tenant, topic)
}

func (r gatedRoutes) Replace(ctx context.Context, tenant, topic string, rt route.Route) error {
	if err := r.g.passTopic("Routes.Replace", topic); err != nil {
		return err
	}
	return r.RouteFiller.Replace(ctx, tenant, topic, rt)
}

func (r gatedRoutes) ReplaceIfMissing(ctx context.Context, tenant, topic string, rt route.Route) (bool, error) {
	if err := r.g.passTopic("Routes.ReplaceIfMissing", topic); err != nil {
		return false, err
	}
	return r.RouteFiller.ReplaceIfMissing(ctx, tenant, topic, rt)
}

// gatedQueue also tells the simulator when the node's deliver consumer has nothing left to
// do: a Take that would wait finds the queue empty (or fails), so the consumer idles until
// stopped.
//
// One consumer runs at a time, so a step replays exactly: the queue a deliver pass hands a
// worker pool shows it one partition of the real queue (part), as partition 0 of one.
type gatedQueue struct {
	ports.DeliverQueue
	g    *gate
	idle func()
	part int
}

// Partitions is the one partition a consumer of the simulation sees.
func (q gatedQueue) Partitions() int { return 1 }

func (q gatedQueue) Push(ctx context.Context, job delivery.Job) error {
	if err := q.g.pass(redisBackend, "Queue.Push"); err != nil {
		return err
	}
	return q.DeliverQueue.Push(ctx, job)
}

func (q gatedQueue) Take(ctx context.Context, tenant string, partition int, timeout time.Duration) (delivery.Job, bool, error) {
	if err := q.g.pass(redisBackend, "Queue.Take"); err != nil {
		q.idle()
		return delivery.Job{}, false, err
	}
	job, ok, err := q.DeliverQueue.Take(ctx, tenant, q.part+partition, 0)
	if err != nil {
		q.idle()
	}
	if err != nil || ok || timeout <= 0 {
		return job, ok, err
	}
	q.idle()
	<-ctx.Done()
	return delivery.Job{}, false, nil
}

func (q gatedQueue) TakeMore(ctx context.Context, tenant string, partition, max int) ([]delivery.Job, error) {
	if err := q.g.pass(redisBackend, "Queue.TakeMore"); err != nil {
		q.idle()
		return nil, err
	}
	jobs, err := q.DeliverQueue.TakeMore(ctx, tenant, q.part+partition, max)
	if err != nil {
		q.idle()
	}
	return jobs, err
}

func (q gatedQueue) Ack(ctx context.Context, jobs ...delivery.Job) error {
	if err := q.g.pass(redisBackend, "Queue.Ack"); err != nil {
		return err
	}
	return q.DeliverQueue.Ack(ctx, jobs...)
}

func (q gatedQueue) Retry(ctx context.Context, job delivery.Job, maxAttempts int) (bool, error) {
	if err := q.g.pass(redisBackend, "Queue.Retry"); err != nil {
		return false, err
	}
	return q.DeliverQueue.Retry(ctx, job, maxAttempts)
}

func (q gatedQueue) RequeueStale(ctx context.Context, tenant string) (int, error) {
	if err := q.g.pass(redisBackend, "Queue.RequeueStale"); err != nil {
		return 0, err
	}
	return q.DeliverQueue.RequeueStale(ctx, tenant)
}

func (q gatedQueue) MarkDone(ctx context.Context, tenant string, ttl time.Duration, keys ...string) ([]bool, error) {
	if err := q.g.pass(redisBackend, "Queue.MarkDone"); err != nil {
		return nil, err
	}
	return q.DeliverQueue.MarkDone(ctx, tenant, ttl, keys...)
}

func (q gatedQueue) Done(ctx context.Context, tenant string, keys ...string) ([]bool, error) {
	if err := q.g.pass(redisBackend, "Queue.Done"); err != nil {
		return nil, err
	}
	return q.DeliverQueue.Done(ctx, tenant, keys...)
}

type gatedHot struct {
	ports.HotCache
	g *gate
}

func (h gatedHot) After(ctx context.Context, tenant, topic string, after int64, limit int) ([]message.Message, error) {
	if err := h.g.passTopic("Hot.After", topic); err != nil {
		return nil, err
	}
	return h.HotCache.After(ctx, tenant, topic, after, limit)
}

func (h gatedHot) Before(ctx context.Context, tenant, topic string, before int64, limit int) ([]message.Message, error) {
	if err := h.g.passTopic("Hot.Before", topic); err != nil {
		return nil, err
	}
	return h.HotCache.Before(ctx, tenant, topic, before, limit)
}

func (h gatedHot) Invalidate(ctx context.Context, tenant, topic string, sq int64) error {
	if err := h.g.passTopic("Hot.Invalidate", topic); err != nil {
		return err
	}
	return h.HotCache.Invalidate(ctx, tenant, topic, sq)
}

// followUpParts is a set of the parts of a commit follow-up.
type followUpParts uint8

const (
	failRoute followUpParts = 1 << iota
	failHot
	failJob
	failAcked
	failSettle
	allFollowUpParts = 1<<iota - 1
)

// errPart is a part of a follow-up failing alone (a damaged key: WRONGTYPE).
var errPart = errors.New("sim: WRONGTYPE in one part of the follow-up")

type gatedFollowUp struct {
	ports.CommitFollowUp
	g *gate
}

// Apply is one script call: a crash or an outage fails every part, a follow-up fault the
// parts it names; a failed job leaves the acked mark and the settle unattempted, as the script
// does.
func (f gatedFollowUp) Apply(ctx context.Context, tenant string, u ports.FollowUp) ports.FollowUpResult {
	if err := f.g.pass(redisBackend, "FollowUp.Apply"); err != nil {
		return u.Failed(err)
	}
	failing := f.g.failParts
	f.g.failParts = 0
	if topic, ok := followUpTopic(u); ok && f.g.w.groupIsDown(f.g.w.months.GroupOf(topic)) {
		// The job lies under the tenant's tag, the topic's parts on its group's master, which
		// is down.
		failing |= failRoute | failHot | failAcked | failSettle
	}
	if failing&failJob != 0 && u.Job != nil {
		failing |= failAcked | failSettle
	}
	kept := u
	if failing&failRoute != 0 {
		kept.Route = nil
	}
	if failing&failHot != 0 {
		kept.Hot = nil
	}
	if failing&failJob != 0 {
		kept.Job = nil
	}
	if failing&failAcked != 0 {
		kept.Acked = nil
	}
	if failing&failSettle != 0 {
		kept.Settle = nil
	}
	r := f.CommitFollowUp.Apply(ctx, tenant, kept)
	broken := u.Failed(errPart)
	if failing&failRoute != 0 {
		r.Route = broken.Route
	}
	if failing&failHot != 0 {
		r.Hot = broken.Hot
	}
	if failing&failJob != 0 {
		r.Job = broken.Job
	}
	if failing&failAcked != 0 {
		r.Acked = broken.Acked
	}
	if failing&failSettle != 0 {
		r.Settle = broken.Settle
	}
	if r.Job != nil {
		if u.Acked != nil {
			r.Acked = ports.ErrNotAttempted
		}
		if u.Settle != nil {
			r.Settle = ports.ErrNotAttempted
		}
	}
	return r
}

// followUpTopic is the topic whose slot group holds f's route, hot, acked and settle parts.
func followUpTopic(f ports.FollowUp) (string, bool) {
	switch {
	case f.Route != nil:
		return f.Route.Topic, true
	case f.Hot != nil:
		return f.Hot.Topic, true
	case f.Acked != nil:
		return f.Acked.Topic, true
	case f.Settle != nil:
		return f.Settle.Topic, true
	}
	return "", false
}

type gatedGaps struct {
	ports.ListGaps
	g *gate
}

func (d gatedGaps) Note(ctx context.Context, tenant string, at time.Time, gaps ...dialog.Gap) error {
	if err := d.g.pass(redisBackend, "Gaps.Note"); err != nil {
		return err
	}
	return d.ListGaps.Note(ctx, tenant, at, gaps...)
}

func (d gatedGaps) Due(ctx context.Context, tenant string, notedBy time.Time, limit int) ([]dialog.Gap, error) {
	if err := d.g.pass(redisBackend, "Gaps.Due"); err != nil {
		return nil, err
	}
	return d.ListGaps.Due(ctx, tenant, notedBy, limit)
}

func (d gatedGaps) Close(ctx context.Context, tenant string, gaps ...dialog.Gap) error {
	if err := d.g.pass(redisBackend, "Gaps.Close"); err != nil {
		return err
	}
	return d.ListGaps.Close(ctx, tenant, gaps...)
}

type gatedDialogs struct {
	ports.DialogStore
	g *gate
}

func (d gatedDialogs) Apply(ctx context.Context, tenant string, us ...dialog.Update) ([]dialog.Applied, error) {
	if err := d.g.pass(redisBackend, "Dialogs.Apply"); err != nil {
		return nil, err
	}
	return d.DialogStore.Apply(ctx, tenant, us...)
}

func (d gatedDialogs) AppliedSeq(ctx context.Context, tenant string, conversationID int64) (int64, error) {
	if err := d.g.pass(redisBackend, "Dialogs.AppliedSeq"); err != nil {
		return 0, err
	}
	return d.DialogStore.AppliedSeq(ctx, tenant, conversationID)
}

func (d gatedDialogs) MarkRead(ctx context.Context, tenant string, user, conversationID int64) error {
	if err := d.g.pass(redisBackend, "Dialogs.MarkRead"); err != nil {
		return err
	}
	return d.DialogStore.MarkRead(ctx, tenant, user, conversationID)
}

func (d gatedDialogs) Changed(ctx context.Context, tenant string, user, after int64, limit int) ([]dialog.Entry, error) {
	if err := d.g.pass(redisBackend, "Dialogs.Changed"); err != nil {
		return nil, err
	}
	return d.DialogStore.Changed(ctx, tenant, user, after, limit)
}

func (d gatedDialogs) Built(ctx context.Context, tenant string, user int64) (bool, error) {
	if err := d.g.pass(redisBackend, "Dialogs.Built"); err != nil {
		return false, err
	}
	return d.DialogStore.Built(ctx, tenant, user)
}

func (d gatedDialogs) Rebuild(ctx context.Context, tenant string, user int64, states []dialog.State, replace bool) error {
	if err := d.g.pass(redisBackend, "Dialogs.Rebuild"); err != nil {
		return err
	}
	return d.DialogStore.Rebuild(ctx, tenant, user, states, replace)
}

type gatedReads struct {
	ports.ReadStore
	g *gate
}

func (r gatedReads) Advance(ctx context.Context, tenant string, user, conversationID, sq, msgID int64) (dialog.Watermark, bool, error) {
	if err := r.g.pass(mysqlBackend, "Reads.Advance"); err != nil {
		return dialog.Watermark{}, false, err
	}
	return r.ReadStore.Advance(ctx, tenant, user, conversationID, sq, msgID)
}

func (r gatedReads) States(ctx context.Context, tenant string, user int64, ids []int64) ([]dialog.State, error) {
	if err := r.g.pass(mysqlBackend, "Reads.States"); err != nil {
		return nil, err
	}
	return r.ReadStore.States(ctx, tenant, user, ids)
}

func (r gatedReads) AllStates(ctx context.Context, tenant string, user int64) ([]dialog.State, error) {
	if err := r.g.pass(mysqlBackend, "Reads.AllStates"); err != nil {
		return nil, err
	}
	return r.ReadStore.AllStates(ctx, tenant, user)
}

// gatedGraph gates the directory reads a send, a read and a fan-out make.
type gatedGraph struct {
	conversation.Graph
	g *gate
}

func (d gatedGraph) Members(ctx context.Context, tenant, topic string) ([]int64, error) {
	if err := d.g.pass(mysqlBackend, "Directory.Members"); err != nil {
		return nil, err
	}
	return d.Graph.Members(ctx, tenant, topic)
}

func (d gatedGraph) IsMember(ctx context.Context, tenant, topic string, user int64) (bool, error) {
	if err := d.g.pass(mysqlBackend, "Directory.IsMember"); err != nil {
		return false, err
	}
	return d.Graph.IsMember(ctx, tenant, topic, user)
}

func (d gatedGraph) Conversation(ctx context.Context, tenant, topic string) (social.Conversation, error) {
	if err := d.g.pass(mysqlBackend, "Directory.Conversation"); err != nil {
		return social.Conversation{}, err
	}
	return d.Graph.Conversation(ctx, tenant, topic)
}

func (d gatedGraph) ConversationByID(ctx context.Context, tenant string, id int64) (social.Conversation, error) {
	if err := d.g.pass(mysqlBackend, "Directory.ConversationByID"); err != nil {
		return social.Conversation{}, err
	}
	return d.Graph.ConversationByID(ctx, tenant, id)
}

func (d gatedGraph) EnsureP2P(ctx context.Context, tenant string, a, b int64, id int64) (social.Conversation, error) {
	if err := d.g.pass(mysqlBackend, "Directory.EnsureP2P"); err != nil {
		return social.Conversation{}, err
	}
	return d.Graph.EnsureP2P(ctx, tenant, a, b, id)
}

func (d gatedGraph) Relation(ctx context.Context, tenant string, a, b int64) (social.Relation, error) {
	if err := d.g.pass(mysqlBackend, "Directory.Relation"); err != nil {
		return social.Relation{}, err
	}
	return d.Graph.Relation(ctx, tenant, a, b)
}

type gatedHoles struct {
	ports.SeqHoles
	g *gate
}

func (h gatedHoles) HoleSuspects(ctx context.Context, tenant string, m month.Month, after string, limit int) ([]string, error) {
	if err := h.g.pass(mysqlBackend, "Holes.HoleSuspects"); err != nil {
		return nil, err
	}
	return h.SeqHoles.HoleSuspects(ctx, tenant, m, after, limit)
}

func (h gatedHoles) CloseHole(ctx context.Context, tenant string, t message.Message) error {
	if err := h.g.pass(mysqlBackend, "Holes.CloseHole"); err != nil {
		return err
	}
	return h.SeqHoles.CloseHole(ctx, tenant, t)
}

type gatedShards struct {
	ports.ShardStore
	g *gate
}

func (s gatedShards) EnsureTable(ctx context.Context, tenant string, m month.Month) error {
	if err := s.g.pass(mysqlBackend, "Shards.EnsureTable"); err != nil {
		return err
	}
	return s.ShardStore.EnsureTable(ctx, tenant, m)
}

func (s gatedShards) Catalog(ctx context.Context, tenant string) ([]shard.Info, error) {
	if err := s.g.pass(mysqlBackend, "Shards.Catalog"); err != nil {
		return nil, err
	}
	return s.ShardStore.Catalog(ctx, tenant)
}

func (s gatedShards) SetState(ctx context.Context, tenant string, m month.Month, from, to shard.State) error {
	if err := s.g.pass(mysqlBackend, "Shards.SetState"); err != nil {
		return err
	}
	return s.ShardStore.SetState(ctx, tenant, m, from, to)
}

func (s gatedShards) RecordSwitch(ctx context.Context, tenant string, m month.Month, at time.Time) error {
	if err := s.g.pass(mysqlBackend, "Shards.RecordSwitch"); err != nil {
		return err
	}
	err := s.ShardStore.RecordSwitch(ctx, tenant, m, at)
	if err == nil && at.Before(m.Start()) {
		// An early switch is the active month from the instant it is recorded for, whatever
		// Redis learns or loses of it (DESIGN §7.1).
		s.g.w.model.seeActive(m, at)
	}
	return err
}

type gatedHousekeeping struct {
	ports.ShardHousekeeping
	g *gate
}

func (h gatedHousekeeping) PurgeExpiredDedup(ctx context.Context, tenant string, now time.Time, limit int) (int64, error) {
	if err := h.g.pass(mysqlBackend, "Housekeeping.PurgeExpiredDedup"); err != nil {
		return 0, err
	}
	return h.ShardHousekeeping.PurgeExpiredDedup(ctx, tenant, now, limit)
}

func (h gatedHousekeeping) RefreshStats(ctx context.Context, tenant string, m month.Month) error {
	if err := h.g.pass(mysqlBackend, "Housekeeping.RefreshStats"); err != nil {
		return err
	}
	return h.ShardHousekeeping.RefreshStats(ctx, tenant, m)
}

type gatedMonths struct {
	ports.MonthState
	g *gate
}

func (m gatedMonths) MarkReady(ctx context.Context, tenant string, group int, mo month.Month) error {
	if err := m.g.passGroup("Months.MarkReady", group); err != nil {
		return err
	}
	return m.MonthState.MarkReady(ctx, tenant, group, mo)
}

func (m gatedMonths) Active(ctx context.Context, tenant string) (month.Month, bool, error) {
	if err := m.g.pass(redisBackend, "Months.Active"); err != nil {
		return 0, false, err
	}
	// It reads every group, so one master down fails it.
	if m.g.w.groupIsDown(anyGroup) {
		return 0, false, errRedis
	}
	return m.MonthState.Active(ctx, tenant)
}

func (m gatedMonths) Advance(ctx context.Context, tenant string, group int, mo month.Month) (month.Month, error) {
	if err := m.g.passGroup("Months.Advance", group); err != nil {
		return 0, err
	}
	got, err := m.MonthState.Advance(ctx, tenant, group, mo)
	if err == nil {
		m.g.sawMonth = max(m.g.sawMonth, got)
		m.g.w.model.seeActive(got, m.g.w.clock.Now())
	}
	return got, err
}

func (m gatedMonths) SwitchAt(ctx context.Context, tenant string, group int, mo month.Month, at time.Time) (month.Month, error) {
	if err := m.g.passGroup("Months.SwitchAt", group); err != nil {
		return 0, err
	}
	got, err := m.MonthState.SwitchAt(ctx, tenant, group, mo, at)
	if err == nil {
		m.g.sawMonth = max(m.g.sawMonth, got)
		m.g.w.model.seeActive(got, m.g.w.clock.Now())
	}
	return got, err
}

func (m gatedMonths) Now(ctx context.Context) (time.Time, error) {
	if err := m.g.pass(redisBackend, "Months.Now"); err != nil {
		return time.Time{}, err
	}
	return m.MonthState.Now(ctx)
}

type gatedMailbox struct {
	ports.Mailbox
	g *gate
}

func (m gatedMailbox) Append(ctx context.Context, tenant string, events []mailbox.Event) ([]mailbox.Event, error) {
	if err := m.g.pass(mysqlBackend, "Mailbox.Append"); err != nil {
		return nil, err
	}
	return m.Mailbox.Append(ctx, tenant, events)
}

func (m gatedMailbox) Since(ctx context.Context, tenant string, user int64, device uint64, after int64, limit int) ([]mailbox.Event, error) {
	if err := m.g.pass(mysqlBackend, "Mailbox.Since"); err != nil {
		return nil, err
	}
	return m.Mailbox.Since(ctx, tenant, user, device, after, limit)
}

type gatedRepairQueue struct {
	ports.RouteRepairQueue
	g *gate
}

func (q gatedRepairQueue) Add(ctx context.Context, tenant, topic string) error {
	if err := q.g.pass(redisBackend, "Repairs.Add"); err != nil {
		return err
	}
	return q.RouteRepairQueue.Add(ctx, tenant, topic)
}

func (q gatedRepairQueue) Pending(ctx context.Context, tenant string, limit int) ([]ports.RepairTicket, error) {
	if err := q.g.pass(redisBackend, "Repairs.Pending"); err != nil {
		return nil, err
	}
	return q.RouteRepairQueue.Pending(ctx, tenant, limit)
}

func (q gatedRepairQueue) Done(ctx context.Context, tenant string, t ports.RepairTicket) error {
	if err := q.g.pass(redisBackend, "Repairs.Done"); err != nil {
		return err
	}
	return q.RouteRepairQueue.Done(ctx, tenant, t)
}

type gatedCompensation struct {
	ports.CompensationList
	g *gate
}

func (c gatedCompensation) Push(ctx context.Context, tenant string, e ports.Compensation) (bool, error) {
	if err := c.g.pass(redisBackend, "Compensation.Push"); err != nil {
		return false, err
	}
	return c.CompensationList.Push(ctx, tenant, e)
}

type gatedLocks struct {
	ports.Locks
	g *gate
}

func (l gatedLocks) Acquire(ctx context.Context, tenant, name string, ttl time.Duration) (string, bool, error) {
	if err := l.g.pass(redisBackend, "Locks.Acquire"); err != nil {
		return "", false, err
	}
	return l.Locks.Acquire(ctx, tenant, name, ttl)
}

type gatedEditor struct {
	ports.MessageEditor
	g *gate
}

func (e gatedEditor) Modify(ctx context.Context, tenant string, m month.Month, topic string, sq int64,
	change func(message.Message) (message.Revision, error)) (message.Message, error) {
	if err := e.g.pass(mysqlBackend, "Editor.Modify"); err != nil {
		return message.Message{}, err
	}
	return e.MessageEditor.Modify(ctx, tenant, m, topic, sq, change)
}

type gatedDeleteLog struct {
	ports.DeleteLog
	g *gate
}

func (l gatedDeleteLog) HideRange(ctx context.Context, tenant, topic string, user, low, hi int64) error {
	if err := l.g.pass(mysqlBackend, "DeleteLog.HideRange"); err != nil {
		return err
	}
	return l.DeleteLog.HideRange(ctx, tenant, topic, user, low, hi)
}

type gatedRevocations struct {
	ports.TokenRevocations
	g *gate
}

func (r gatedRevocations) RevokeToken(ctx context.Context, tenant, tokenID string, expires time.Time) error {
	if err := r.g.pass(mysqlBackend, "Revocations.RevokeToken"); err != nil {
		return err
	}
	return r.TokenRevocations.RevokeToken(ctx, tenant, tokenID, expires)
}

func (r gatedRevocations) Revocation(ctx context.Context, tenant, tokenID string, user int64) (bool, time.Time, error) {
	if err := r.g.pass(mysqlBackend, "Revocations.Revocation"); err != nil {
		return false, time.Time{}, err
	}
	return r.TokenRevocations.Revocation(ctx, tenant, tokenID, user)
}

// tokens is the token issuer of the simulation: a token is its id, the claims live here.
type tokens struct{ claims map[string]auth.Token }

func (t *tokens) Inspect(token string) (auth.Token, error) {
	c, ok := t.claims[token]
	if !ok {
		return auth.Token{}, errors.New("sim: unknown token")
	}
	return c, nil
}
