package simulation

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/imdhq/imd/adapters/memory"
	"github.com/imdhq/imd/core/domain/auth"
	"github.com/imdhq/imd/core/domain/delivery"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/shard"
	"github.com/imdhq/imd/core/domain/social"
	"github.com/imdhq/imd/core/kit/inflight"
	"github.com/imdhq/imd/core/loop/deliver"
	"github.com/imdhq/imd/core/loop/listrepair"
	"github.com/imdhq/imd/core/loop/migration"
	"github.com/imdhq/imd/core/loop/routerepair"
	"github.com/imdhq/imd/core/loop/seqholes"
	"github.com/imdhq/imd/core/loop/shardmanager"
	"github.com/imdhq/imd/core/store/dualread"
	"github.com/imdhq/imd/core/store/membership"
	"github.com/imdhq/imd/core/usecase/authn"
	"github.com/imdhq/imd/core/usecase/conversation"
	"github.com/imdhq/imd/core/usecase/directory"
	"github.com/imdhq/imd/core/usecase/history"
	"github.com/imdhq/imd/core/usecase/inbox"
	"github.com/imdhq/imd/core/usecase/modify"
	"github.com/imdhq/imd/core/usecase/read"
	"github.com/imdhq/imd/core/usecase/send"
	"github.com/imdhq/imd/ports"
)

const tenant = "sim"

// The simulated world's fixed shape: users with two devices each, two groups and one P2P
// pair, served by three nodes.
const (
	nodeCount   = 3
	userCount   = 6
	deviceCount = 2
	partitions  = 3
	// slotGroups is how many copies of the month state the world keeps (DESIGN §11): its
	// three topics land in three of the four, one is empty.
	slotGroups = 4
)

// Timing rules of the use cases, as the dev configuration has them.
const (
	doneTTL     = 10 * time.Minute
	holeAfter   = 10 * time.Minute
	msgIDWindow = 5 * time.Minute
	memberTTL   = time.Second
	reorderWait = 200 * time.Millisecond
	maxAttempts = 5
	sealingDays = 7
	hotWindow   = time.Hour
	hotPerTopic = 200
	// dedupRetention is the shortest the product allows (shard.dedup_retention_days 7), so
	// retries reach past it within a run.
	dedupRetention = 7 * 24 * time.Hour
	// legacyBatch cuts the copy of the legacy group's 30 rows into five batches, with crashes
	// and outages between them.
	legacyBatch         = 7
	tokenTTL            = 24 * time.Hour * 3650 // revocations of the memory fake use the wall clock
	recentRevocationTTL = 5 * time.Second
	// repairSettle and repairWindow are the list repair's: a week's window reaches back past
	// most of the clock's jumps, so the lists must converge for nearly every lost job.
	repairSettle = 30 * time.Second
	repairWindow = 7 * 24 * time.Hour
	startOfWorld = "2026-09-30T23:00:00Z"
)

// world is the shared state: the fakes standing for MySQL and Redis, the clients' view, the
// nodes, and what the invariants compare against.
type world struct {
	mu    sync.Mutex // gate bookkeeping; the step loop itself is single-threaded
	log   *slog.Logger
	clock *memory.Clock
	ids   *memory.IDs

	// MySQL.
	shards      *memory.ShardStore
	store       *memory.MessageStore
	dir         *memory.Directory
	reads       *memory.ReadStore
	mailbox     *memory.Mailbox
	revocations *memory.Revocations
	editor      *memory.MessageEditor
	dellog      *memory.DeleteLog
	// legacy is the tenant's legacy single table and its migration job (migrate_test.go).
	legacy *memory.Legacy
	// dualRead reads the month tables merged with the legacy table, past every gate.
	dualRead     ports.MessageStore
	legacyTopic  string
	legacyMsgs   []message.Message
	legacyCopied map[int64]bool // seqs of legacy rows the month tables held at the last check
	// Redis.
	months  *memory.MonthState
	seqs    *memory.SeqAllocator
	queue   *memory.DeliverQueue
	routes  *memory.RouteCache
	hot     *memory.HotCache
	dialogs *memory.DialogStore
	repairs *memory.RepairQueue
	locks   *memory.Locks
	comp    *memory.CompensationList

	metrics *memory.Metrics
	tokens  *tokens

	nodes []*node
	// Faults in force.
	mysqlDown, redisDown bool
	// groupDown is the slot group whose Redis master is down (kGroupOutage), noGroup for none.
	groupDown int
	slow      map[deviceKey]bool // pushes to these devices fail
	offline   map[deviceKey]bool
	// onConn is the highest MESSAGE seq per topic queued on each device's connection: like
	// session.Registry, the connection drops a repeat (a deliver job pushed again after its
	// consumer crashed before marking it done); going offline closes it and forgets.
	onConn   map[deviceKey]map[string]int64
	snapshot []func() // a Redis copy to roll back to
	// redisRollbacks counts rollbacks: a rolled-back queue may push a job again.
	redisRollbacks int
	// listsLost: the conversation lists were lost or rolled back, so they were rebuilt;
	// listsLostAt is when that last happened.
	listsLost   bool
	listsLostAt time.Time
	// sweptAt: when the seq-hole sweeper last ran through without a fault; every hole whose
	// next message was older than holeAfter then is closed.
	sweptAt time.Time

	model model
	stats stats
	// traceOn prints each step's effects (replays).
	traceOn bool
	traces  []string
}

type deviceKey struct {
	user   int64
	device uint64
}

type stats struct {
	steps, calls, faults, checks int64
}

// loseLists notes that v, lost or rolled back, held the conversation lists.
func (w *world) loseLists(v memory.Volatile) {
	if v == memory.Volatile(w.dialogs) {
		w.listsLost, w.listsLostAt = true, w.clock.Now()
	}
}

// volatile lists every fake that stands for Redis.
func (w *world) volatile() []memory.Volatile {
	return []memory.Volatile{w.months, w.seqs, w.queue, w.routes, w.hot, w.dialogs, w.repairs, w.locks, w.comp}
}

func (w *world) trace(format string, args ...any) {
	if w.traceOn {
		w.traces = append(w.traces, fmt.Sprintf(format, args...))
	}
}

// conversationSpec is one conversation of the world.
type conversationSpec struct {
	topic   string
	id      int64
	group   int64 // 0 for P2P
	members []int64
	p2p     bool
}

func newWorld() (*world, error) {
	start, err := time.Parse(time.RFC3339, startOfWorld)
	if err != nil {
		return nil, err
	}
	clock := memory.NewClock(start)
	w := &world{
		groupDown: noGroup, log: slog.New(slog.NewTextHandler(io.Discard, nil)), clock: clock, ids: memory.NewIDs(clock),
		shards: memory.NewShardStore().WithRetention(clock.Now, dedupRetention), dir: memory.NewDirectory(), mailbox: memory.NewMailbox(),
		seqs: nil, routes: memory.NewRouteCache(),
		hot: memory.NewHotCache(clock.Now, hotWindow, hotPerTopic), dialogs: memory.NewDialogStore(clock.Now),
		revocations: memory.NewRevocations(), repairs: memory.NewRepairQueue(), locks: memory.NewLocks(clock.Now),
		comp: memory.NewCompensationList(), metrics: memory.NewMetrics(), tokens: &tokens{claims: map[string]auth.Token{}},
		slow: map[deviceKey]bool{}, offline: map[deviceKey]bool{}, onConn: map[deviceKey]map[string]int64{},
	}
	if w.queue, err = memory.NewDeliverQueue(clock.Now).WithPartitions(partitions); err != nil {
		return nil, err
	}
	w.store = memory.NewMessageStore(w.shards)
	w.reads = memory.NewReadStore(w.dir, w.shards)
	w.editor = memory.NewMessageEditor(w.shards)
	w.dellog = memory.NewDeleteLog(w.shards)
	w.legacy = memory.NewLegacy(w.shards, clock.Now)
	w.dualRead = dualread.NewStore(w.store, dualread.NewSource(w.legacy, clock, time.Nanosecond, w.log))
	w.months = memory.NewGroupedMonthState(clock.Now, slotGroups)
	w.seqs = memory.NewSeqAllocator(w.months, clock.Now)
	w.model = newModel()
	ctx := context.Background()
	for u := int64(1); u <= userCount; u++ {
		if err := w.dir.CreateUser(ctx, tenant, social.User{ID: u}); err != nil {
			return nil, err
		}
	}
	for i, members := range [][]int64{{1, 2, 3, 4}, {3, 4, 5, 6}} {
		c, err := w.dir.CreateGroup(ctx, tenant, social.Group{ID: int64(10 + i), Owner: members[0]}, int64(5000+i), members[1:], 0)
		if err != nil {
			return nil, err
		}
		w.model.conversations = append(w.model.conversations, conversationSpec{topic: c.Topic, id: c.ID, group: int64(10 + i), members: members})
		for _, u := range members {
			w.model.spans[userTopic{u, c.Topic}] = []memberSpan{{from: -1, to: -1}}
		}
	}
	if err := w.dir.AddFriendship(ctx, tenant, 1, 5); err != nil {
		return nil, err
	}
	p2p, err := w.dir.EnsureP2P(ctx, tenant, 1, 5, 5100)
	if err != nil {
		return nil, err
	}
	w.model.conversations = append(w.model.conversations, conversationSpec{topic: p2p.Topic, id: p2p.ID, members: []int64{1, 5}, p2p: true})
	for _, u := range []int64{1, 5} {
		w.model.spans[userTopic{u, p2p.Topic}] = []memberSpan{{from: -1, to: -1}}
	}
	if err := w.seedLegacy(ctx); err != nil {
		return nil, err
	}
	for range nodeCount {
		w.nodes = append(w.nodes, w.boot(&gate{w: w}))
	}
	if err := w.nodes[0].manager.Ensure(ctx, tenant); err != nil {
		return nil, err
	}
	return w, nil
}

// node is one imd process: its use cases, built over gated ports like cmd/imd builds them,
// and the in-process state a crash loses (caches, in-flight sends).
type node struct {
	g         *gate
	send      *send.Service
	history   *history.Service
	read      *read.Service
	inbox     *inbox.Service
	modify    *modify.Service
	manager   *shardmanager.Manager
	repair    *routerepair.Service
	authn     *authn.Service
	sweeper   *seqholes.Sweeper
	groups    *directory.Service
	migration *migration.Service
	lists     *listrepair.Service
	newWorker func(partition int, idle func()) *deliver.Workers
	// poolFull: the node's task pool is full, so its transport refuses every send.
	poolFull bool
}

// boot builds a node's use cases; a reboot after a crash calls it again, so nothing of the
// dead process survives but what the shared fakes hold.
func (w *world) boot(g *gate) *node {
	dir := gatedGraph{Graph: w.dir, g: g}
	store := gatedStore{storePorts: w.store, g: g}
	routes := gatedRoutes{RouteFiller: w.routes, g: g}
	months := gatedMonths{MonthState: w.months, g: g}
	dialogs := gatedDialogs{DialogStore: w.dialogs, g: g}
	reads := gatedReads{ReadStore: w.reads, g: g}
	mbox := gatedMailbox{Mailbox: w.mailbox, g: g}
	queue := gatedQueue{DeliverQueue: w.queue, g: g, idle: func() {}}
	// Dual read is on, as migration.dual_read has it on every node: reads and route rebuilds
	// merge the legacy table.
	merged := dualread.NewStore(store, dualread.NewSource(w.legacy, w.clock, 0, w.log))
	members := membership.New(dir, w.clock, memberTTL)
	resolver := conversation.NewResolver(dir, w.ids, members, conversation.WithClock(w.clock), conversation.WithRulesTTL(memberTTL))
	repair := routerepair.New(routerepair.Config{}, routerepair.Deps{
		Queue: gatedRepairQueue{RouteRepairQueue: w.repairs, g: g}, Store: merged, Mirror: memory.NewRouteMirror(w.shards),
		Routes: routes, Months: months, Metrics: w.metrics, Log: w.log,
	})
	manager := shardmanager.New(shardmanager.Config{SealingDays: sealingDays}, shardmanager.Deps{
		Store: gatedShards{ShardStore: w.shards, g: g}, Months: months, Locks: gatedLocks{Locks: w.locks, g: g},
		Repairs: repair, Compensation: gatedCompensation{CompensationList: w.comp, g: g}, Metrics: w.metrics, Log: w.log,
		Housekeeping: gatedHousekeeping{ShardHousekeeping: memory.NewHousekeeping(w.shards), g: g},
		Sleep:        w.clock.Sleep,
	})
	sending := inflight.New()
	hot := gatedHot{HotCache: w.hot, g: g}
	// One gated call, as the Redis adapter makes one script call: it fails as a whole, or only
	// in the parts a follow-up fault names.
	followUp := gatedFollowUp{CommitFollowUp: &memory.CommitFollowUp{Routes: w.routes, Hot: w.hot, Queue: w.queue, Seqs: w.seqs}, g: g}
	n := &node{g: g, manager: manager, repair: repair}
	n.send = send.New(send.Config{MsgIDWindow: msgIDWindow}, send.Deps{
		Seq: gatedSeq{SeqAllocator: w.seqs, g: g}, Store: store, FollowUp: followUp, Queued: store, IDs: w.ids, Clock: w.clock,
		Metrics: w.metrics, Resolver: resolver, Log: w.log, Months: manager,
		Repairs: repair, Compensation: gatedCompensation{CompensationList: w.comp, g: g}, InFlight: sending,
	})
	n.sweeper = seqholes.New(seqholes.Config{After: holeAfter}, seqholes.Deps{
		Holes: gatedHoles{SeqHoles: w.store, g: g}, Store: store, Shards: gatedShards{ShardStore: w.shards, g: g},
		IDs: w.ids, Clock: w.clock, Metrics: w.metrics, Log: w.log,
	})
	n.groups = directory.New(directory.Deps{
		Directory: w.dir, Profiles: w.dir, Friends: w.dir, Blocks: w.dir, Groups: w.dir, Resolver: resolver,
		IDs: w.ids, Clock: w.clock, Dialogs: w.dialogs, Log: w.log,
	})
	n.history = history.New(history.Deps{
		Store: merged, Routes: routes, Months: months, Metrics: w.metrics, Resolver: resolver, Log: w.log, Repairs: repair,
	})
	n.read = read.New(read.Deps{
		Resolver: resolver, History: n.history, Finder: store, IDs: w.ids, Reads: reads, Dialogs: dialogs, Queue: queue, Log: w.log,
	})
	n.modify = modify.New(modify.Config{}, modify.Deps{
		Editor: gatedEditor{MessageEditor: w.editor, g: g}, DeleteLog: gatedDeleteLog{DeleteLog: w.dellog, g: g}, Store: store,
		Owners: w.dir, HotCache: hot, Locator: n.history, Events: n.send, Resolver: resolver, Clock: w.clock, Metrics: w.metrics, Log: w.log,
	})
	n.migration = migration.New(migration.Config{BatchSize: legacyBatch, RowsPerSecond: -1}, migration.Deps{
		Store: gatedMigrations{MigrationStore: w.legacy, g: g}, Shards: gatedShards{ShardStore: w.shards, g: g}, Months: months,
		Seq: gatedSeq{SeqAllocator: w.seqs, g: g}, Routes: repair, Metrics: w.metrics, IDs: w.ids,
		Clock: w.clock, Log: w.log, DualRead: true,
	})
	n.inbox = inbox.New(inbox.Deps{Dialogs: dialogs, Reads: reads, Mailbox: mbox, Clock: w.clock, Metrics: w.metrics, Log: w.log})
	n.authn = authn.New(authn.Config{RecentTTL: recentRevocationTTL, MaxTTL: tokenTTL}, authn.Deps{
		Tokens: w.tokens, Revocations: gatedRevocations{TokenRevocations: w.revocations, g: g},
		Tenants: func(name string) bool { return name == tenant }, Users: w.dir, Clock: w.clock,
	})
	gaps := gatedGaps{ListGaps: w.dialogs, g: g}
	n.lists = listrepair.New(listrepair.Config{Settle: repairSettle, Window: repairWindow}, listrepair.Deps{
		Gaps: gaps, Dialogs: dialogs, History: n.history, Mirror: memory.NewRouteMirror(w.shards), Months: months,
		Members: members, Metrics: w.metrics, Clock: w.clock, Log: w.log,
	})
	pusher := &pusher{w: w}
	mailer := inbox.NewMailer(inbox.MailerDeps{Mailbox: mbox, Pusher: pusher, IDs: w.ids, Clock: w.clock, Log: w.log})
	n.newWorker = func(partition int, idle func()) *deliver.Workers {
		q := queue
		q.idle, q.part = idle, partition
		return deliver.New(deliver.Config{TakeTimeout: time.Second, DoneTTL: doneTTL, MaxAttempts: maxAttempts, ReorderWait: reorderWait, RepairWindow: repairWindow},
			deliver.Deps{
				Queue: q, Pusher: pusher, Dialogs: dialogs, Mailer: mailer, Notifier: notifier{}, Members: members,
				Metrics: w.metrics, Clock: w.clock, Log: w.log, InFlight: sending, Gaps: gaps,
			})
	}
	return n
}

// reboot replaces a crashed node by a fresh process.
func (w *world) reboot(i int) {
	g := w.nodes[i].g
	g.crashed, g.method, g.n, g.seen, g.sawMonth, g.fresh, g.beforeAppend = false, "", 0, 0, 0, freshAllocation{}, nil
	g.failParts = 0
	w.nodes[i] = w.boot(g)
}

// runDeliver boots node i's deliver consumer of each partition in turn, lets it work until it
// idles with nothing left to take (or nothing it can take), and stops it: one deterministic
// consumer pass. Partitions taking turns is one interleaving of the consumers a node runs at
// once; each boot moves the partitions' unfinished jobs back, as a restart does.
func (w *world) runDeliver(i int) error {
	for p := range w.queue.Partitions() {
		if err := w.runPartition(i, p); err != nil {
			return err
		}
		if w.nodes[i].g.crashed {
			return nil
		}
	}
	return nil
}

func (w *world) runPartition(i, partition int) error {
	n := w.nodes[i]
	idle := make(chan struct{}, 1)
	workers := n.newWorker(partition, func() {
		select {
		case idle <- struct{}{}:
		default:
		}
	})
	if err := workers.Start(context.Background(), []string{tenant}); err != nil {
		w.trace("deliver consumer %d of node %d did not start: %v", partition, i, err)
		return nil // the boot failed before any consumer ran, as it would with Redis down
	}
	select {
	case <-idle:
	case <-time.After(time.Minute):
		return fmt.Errorf("deliver consumer %d of node %d never idled", partition, i)
	}
	return workers.Stop(context.Background())
}

// pusher is the session registry of every node at once: it records what each device got.
type pusher struct{ w *world }

var _ ports.DevicePusher = (*pusher)(nil)

func (p *pusher) Push(ctx context.Context, name string, t delivery.Target, push delivery.Push) delivery.Report {
	return p.PushReach(ctx, name, delivery.Addressed{Target: t, Push: push})[0].Report
}

func (p *pusher) PushReach(_ context.Context, _ string, pushes ...delivery.Addressed) []delivery.Outcome {
	out := make([]delivery.Outcome, len(pushes))
	for i, a := range pushes {
		for _, user := range a.Target.Recipients {
			online := false
			for d := uint64(1); d <= deviceCount; d++ {
				k := deviceKey{user, d}
				if p.w.offline[k] {
					continue
				}
				if user == a.Target.Sender && d == a.Target.ExcludeDevice {
					online = true
					continue
				}
				online = true
				if p.w.slow[k] {
					out[i].Failed++
					out[i].FailedDevices = append(out[i].FailedDevices, delivery.Device{User: user, Device: d})
					continue
				}
				out[i].Delivered++
				if m := a.Push.Message; a.Push.Kind == delivery.KindMessage && m != nil {
					if high, ok := p.w.onConn[k][m.Topic]; ok && m.Seq <= high {
						continue // queued on this connection before: dropped
					}
					if p.w.onConn[k] == nil {
						p.w.onConn[k] = map[string]int64{}
					}
					p.w.onConn[k][m.Topic] = m.Seq
					p.w.model.livePush(p.w, k, *m)
				}
			}
			if !online {
				out[i].Offline++
				out[i].OfflineUsers = append(out[i].OfflineUsers, user)
			}
		}
	}
	return out
}

func (p *pusher) PushDevice(context.Context, string, int64, uint64, delivery.Push) int { return 0 }

type notifier struct{}

func (notifier) Notify(context.Context, string, delivery.Notification) error { return nil }

// Values of world.groupDown and of groupIsDown's argument.
const (
	noGroup  = -1
	anyGroup = -2
)

// groupIsDown reports whether the master of the slot group is down, or of any group for
// anyGroup.
func (w *world) groupIsDown(group int) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.groupDown != noGroup && (group == w.groupDown || group == anyGroup)
}

// activeMonth reads the active month straight from the fake, past every gate.
func (w *world) activeMonth() (month.Month, bool) {
	m, ok, _ := w.months.Active(context.Background(), tenant)
	return m, ok
}

// newestWritable reads the catalog's newest writable month straight from the fake.
func (w *world) newestWritable() month.Month {
	infos, _ := w.shards.Catalog(context.Background(), tenant)
	return shard.NewestWritable(infos)
}

func (w *world) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "clock %s", w.clock.Now().Format(time.RFC3339Nano))
	if m, ok := w.activeMonth(); ok {
		fmt.Fprintf(&b, ", active month %s", m)
	}
	var faults []string
	if w.mysqlDown {
		faults = append(faults, "mysql down")
	}
	if w.redisDown {
		faults = append(faults, "redis down")
	}
	if w.groupDown != noGroup {
		faults = append(faults, fmt.Sprintf("slot group %d down", w.groupDown))
	}
	for k := range w.slow {
		faults = append(faults, fmt.Sprintf("slow %d/%d", k.user, k.device))
	}
	slices.Sort(faults)
	if len(faults) > 0 {
		fmt.Fprintf(&b, ", %s", strings.Join(faults, ", "))
	}
	return b.String()
}
