// Package ports declares what the core needs from the outside world. Adapters implement these
// interfaces; the core never imports an adapter. Every call takes the tenant explicitly, since
// each tenant has its own database and Redis hash tag.
package ports

import (
	"context"
	"time"

	"github.com/imdhq/imd/core/domain/auth"
	"github.com/imdhq/imd/core/domain/delivery"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/route"
	"github.com/imdhq/imd/core/domain/seq"
	"github.com/imdhq/imd/core/domain/shard"
	"github.com/imdhq/imd/core/domain/social"
)

// Clock tells the server time. Month decisions never use it (they use Redis TIME).
type Clock interface {
	Now() time.Time
}

// IDGenerator issues msg_ids (sonyflake, DESIGN §1).
type IDGenerator interface {
	NextID() (int64, error)
	// TimeOf returns when id was generated, to validate client pre-generated ids.
	TimeOf(id int64) time.Time
}

// SeqAllocator is the atomic Redis script of DESIGN §4 step 4.
type SeqAllocator interface {
	// Allocate returns seq.ErrCounterMissing when the topic counter is absent and
	// seq.ErrNoActiveMonth when no month is ready.
	Allocate(ctx context.Context, tenant string, req seq.Request) (seq.Allocation, error)
	// Reseed raises the topic counter to at least floor (never lowers it).
	Reseed(ctx context.Context, tenant, topic string, floor int64) error
}

// PendingSeqs is the cluster-wide view of the seqs whose sends still run (seq.Request.Attempt
// marks them in the allocation's own atomic step). A deliver consumer asks it before giving a
// gap up, since the send may run on a node it cannot see.
type PendingSeqs interface {
	// Pending reports whether a seq in [from, to] of topic has an unexpired mark.
	Pending(ctx context.Context, tenant, topic string, from, to int64) (bool, error)
	// Settle removes the mark of one attempt at seq: its job was queued, or it failed. The
	// marks of other attempts at the same seq (a retry on another node) stay.
	Settle(ctx context.Context, tenant, topic string, seqNo int64, attempt string) error
}

// AppendOutcome says what a store append did.
type AppendOutcome int

const (
	// Stored: the message is now committed.
	Stored AppendOutcome = iota + 1
	// AlreadyStored: the same msg_id was committed before (a retry after a lost ACK).
	AlreadyStored
	// DuplicateClientMsgID: another message holds (topic, from, client_msg_id); Existing
	// describes it. The seq allocated for the new attempt was closed with a tombstone.
	DuplicateClientMsgID
)

// AppendResult is the outcome of one append.
type AppendResult struct {
	Outcome  AppendOutcome
	Existing message.Message // for DuplicateClientMsgID and AlreadyStored
	Hash     string          // payload hash of Existing
	// Queued (for DuplicateClientMsgID and AlreadyStored): the dedup record says Existing's
	// deliver job was queued (QueuedMarks), so a resend enqueues nothing, however late.
	Queued bool
}

// QueuedMarks records in a message's durable dedup record that its deliver job was queued, so
// deliver-once rests on MySQL, not on a Redis marker that expires (DESIGN §11; seed 003 §20.11).
type QueuedMarks interface {
	// MarkQueued flags the dedup record of (topic, from, client_msg_id); a missing record
	// (purged after its retention) is not an error.
	MarkQueued(ctx context.Context, tenant, topic string, from int64, clientMsgID string) error
}

// MessageStore is the durable message storage: month tables, dedup records and the route
// mirror of one tenant database (seed 000 §3).
type MessageStore interface {
	// Append commits the message, its dedup record and the route-mirror upsert in one
	// transaction (concurrent appends may share it). It fails with seq.ErrTaken when another
	// message holds (topic, seq) and with shard.ErrMonthNotWritable when the month cannot
	// take the write.
	Append(ctx context.Context, tenant string, m message.Message, hash string) (AppendResult, error)
	// AppendFresh is Append of a seq and month the seq script has just allocated, at instant
	// at on the Redis clock (seq.Allocation.At; not a record an earlier attempt fixed, which
	// may be a late write into a sealing month, seed 000 §5.3). It also fails with
	// shard.ErrMonthBehind when the message would be a new row (a new message, or the
	// tombstone of a reused client_msg_id) and the catalog, read in the write transaction,
	// had already switched to a later month at that instant (shard.Superseding): only a stale
	// Redis hands such a month out (seed 000 §3.3: the active month never goes back). A send
	// allocated before a switch and written after it is taken. A message stored before is
	// still answered from its dedup record, whatever its month. It first records the month
	// active by at (ShardStore's ActiveSince lowered to at, shard.EarlierActive), since the
	// seq script handed the month out then, so a Redis that forgets an early switch
	// afterwards cannot have a later allocation in the month before taken once a message of
	// the month is stored.
	AppendFresh(ctx context.Context, tenant string, m message.Message, hash string, at time.Time) (AppendResult, error)
	// MaxSeq is the highest seq ever stored for the topic (re-seeding after Redis loss).
	MaxSeq(ctx context.Context, tenant, topic string) (int64, error)
	// Segments reads the topic's route mirror.
	Segments(ctx context.Context, tenant, topic string) (route.Route, error)
	// Get reads one message of one month; message.ErrNotFound when absent.
	Get(ctx context.Context, tenant string, m month.Month, topic string, seq int64) (message.Message, error)
	// Page reads one month in seq order; see message.PageQuery.
	Page(ctx context.Context, tenant string, m month.Month, q message.PageQuery) ([]message.Message, error)
}

// RouteCache is the Redis copy of the route (route:{topic} ZSET + route_meta:{topic} HASH).
type RouteCache interface {
	// Segments returns found=false when the topic has no route in Redis.
	Segments(ctx context.Context, tenant, topic string) (r route.Route, found bool, err error)
	// Apply merges committed ranges into the routes of their topics.
	Apply(ctx context.Context, tenant string, updates []RouteUpdate) error
	// Replace overwrites a topic's route (rebuild from the MySQL mirror).
	Replace(ctx context.Context, tenant, topic string, r route.Route) error
}

// RouteUpdate is one committed range of one topic in one month.
type RouteUpdate struct {
	Topic   string
	Segment route.Segment
}

// DeliverQueue is the reliable Redis list pair deliver:queue / deliver:processing, split into
// partitions by topic (delivery.PartitionOf): each partition is FIFO and has its own
// processing list, so one consumer per partition sees every topic's jobs in push order.
type DeliverQueue interface {
	// Partitions is how many partitions each tenant's queue has.
	Partitions() int
	// Push appends the job to the partition of its topic.
	Push(ctx context.Context, job delivery.Job) error
	// Take moves the oldest job of a partition to its processing list (BLMOVE), waiting up to
	// timeout (≤ 0: no wait); ok=false on timeout.
	Take(ctx context.Context, tenant string, partition int, timeout time.Duration) (job delivery.Job, ok bool, err error)
	// TakeMore moves up to max of the oldest jobs of a partition to its processing list in one
	// step, without waiting: what a consumer takes after Take, so a backlog costs a round trip
	// per batch, not per job.
	TakeMore(ctx context.Context, tenant string, partition, max int) ([]delivery.Job, error)
	// Ack removes taken jobs from processing.
	Ack(ctx context.Context, jobs ...delivery.Job) error
	// Retry puts a taken job back on its partition with Attempts+1, or on the dead-letter list
	// when it has failed maxAttempts times (dead=true).
	Retry(ctx context.Context, job delivery.Job, maxAttempts int) (dead bool, err error)
	// RequeueStale moves everything left in the processing lists back to the head of their
	// partitions (boot after a crash), and the jobs still queued under another partition count
	// (the configuration changed) into the partitions of the current one, each topic's in order,
	// and returns how many jobs it put back or moved. Call it at boot, before any Take.
	RequeueStale(ctx context.Context, tenant string) (int, error)
	// MarkDone sets deliver:done:{key} of each key once, for ttl; first[i]=false means the job
	// of keys[i] already acted.
	MarkDone(ctx context.Context, tenant string, ttl time.Duration, keys ...string) (first []bool, err error)
	// Done reports, changing nothing, which keys MarkDone has set and not yet expired: a job
	// marks its key only after its push, so a set key says the job's message was pushed.
	Done(ctx context.Context, tenant string, keys ...string) (done []bool, err error)
}

// Pusher writes to connected devices (the session registry of the transport).
type Pusher interface {
	Push(ctx context.Context, tenant string, t delivery.Target, p delivery.Push) delivery.Report
}

// Directory is the social graph a send is checked against.
type Directory interface {
	// CreateUser creates a user or renames a known one; a deleted user stays deleted.
	CreateUser(ctx context.Context, tenant string, u social.User) error
	Users
	UserStates
	// AddFriendship makes a and b friends; only operators do, so its friendship.changed event
	// has no actor.
	AddFriendship(ctx context.Context, tenant string, a, b int64) error
	AreFriends(ctx context.Context, tenant string, a, b int64) (bool, error)
	// CreateGroup creates the group, its conversation and its members (owner included). by is
	// the user creating it, 0 for an operator: the actor of its member.joined event (issue 32).
	CreateGroup(ctx context.Context, tenant string, g social.Group, conversationID int64, members []int64, by int64) (social.Conversation, error)
	// AddMembers adds users to a group; by is the user adding them, 0 for an operator.
	AddMembers(ctx context.Context, tenant string, topic string, users []int64, by int64) error
	Members(ctx context.Context, tenant, topic string) ([]int64, error)
	IsMember(ctx context.Context, tenant, topic string, user int64) (bool, error)
	// Conversation looks a conversation up by topic; social.ErrNotFound when absent.
	Conversation(ctx context.Context, tenant, topic string) (social.Conversation, error)
	ConversationByID(ctx context.Context, tenant string, id int64) (social.Conversation, error)
	// EnsureP2P returns the one conversation of a user pair, creating it with id on first use.
	EnsureP2P(ctx context.Context, tenant string, a, b int64, id int64) (social.Conversation, error)
}

// Tokens issues and verifies client tokens.
type Tokens interface {
	Issue(id auth.Identity, ttl time.Duration) (string, error)
	// Verify fails with an apperr.Unauthenticated error for bad or expired tokens.
	Verify(token string) (auth.Identity, error)
}

// ShardStore is the MySQL side of the shard manager: DDL and the catalog (seed 000 §3.2, §4).
type ShardStore interface {
	// EnsureTable creates the month table from the template if missing and registers it in the
	// catalog as prepared (existing rows keep their state). DDL runs outside any write transaction.
	EnsureTable(ctx context.Context, tenant string, m month.Month) error
	Catalog(ctx context.Context, tenant string) ([]shard.Info, error)
	SetState(ctx context.Context, tenant string, m month.Month, from, to shard.State) error
	// RecordSwitch lowers m's ActiveSince to at (sets it when unset): each record is an
	// instant by which m is active, so the earliest stands. A month not in the catalog is
	// left alone (callers record a month they have just prepared).
	RecordSwitch(ctx context.Context, tenant string, m month.Month, at time.Time) error
}

// MonthState is the Redis side of month switching: which months are ready and which is active.
// Each slot group (DESIGN §11) keeps its own copy, beside the seq counters of its topics, so
// the seq script reads and moves its group's active month in the step that hands out a seq; the
// shard manager switches the groups one after another (DESIGN §7.2).
type MonthState interface {
	// Groups is how many slot groups keep a copy: they are 0 to Groups()-1.
	Groups() int
	// GroupOf is the group whose copy the allocations of a topic read.
	GroupOf(topic string) int
	// MarkReady lets the seq script move the group's active_month to m.
	MarkReady(ctx context.Context, tenant string, group int, m month.Month) error
	// Active is the newest month active in any group (found=false while none is): the newest
	// month a message may be in, which readers look up to.
	Active(ctx context.Context, tenant string) (m month.Month, found bool, err error)
	// Advance moves the group's active_month forward to m if m is ready there; never backward.
	// A scheduled switch that is due is applied first. It returns the group's active month
	// after the call (zero when none).
	Advance(ctx context.Context, tenant string, group int, m month.Month) (month.Month, error)
	// SwitchAt schedules an early switch of the group: its active_month moves forward to m
	// once Redis TIME reaches at, in the same atomic step that first finds it due (an
	// allocation or an Advance), as it does when TIME enters a ready month; at once when at
	// has passed. m must be ready by then. One switch is scheduled at a time: a later month
	// replaces an earlier one, the same month keeps the earlier instant. It returns the
	// group's active month after the call (zero when none).
	SwitchAt(ctx context.Context, tenant string, group int, m month.Month, at time.Time) (month.Month, error)
	// Now is Redis TIME, the only clock month decisions use.
	Now(ctx context.Context) (time.Time, error)
}

// Metrics records the seed metrics (000 §11, 003 §17) by name.
type Metrics interface {
	Inc(name string, labels ...string)
	// Add adds value (≥ 0) to a counter at once: the rows one batch copied, the frames one
	// write carried, where an Inc each would look the counter up again per event.
	Add(name string, value float64, labels ...string)
	Observe(name string, value float64, labels ...string)
	Set(name string, value float64, labels ...string)
}
