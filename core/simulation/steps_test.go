package simulation

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/imdhq/imd/core/domain/auth"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/usecase/conversation"
	"github.com/imdhq/imd/core/usecase/directory"
	"github.com/imdhq/imd/core/usecase/modify"
	"github.com/imdhq/imd/core/usecase/read"
	"github.com/imdhq/imd/core/usecase/send"
)

// kind is what a step does. Its operands (node, a, b, c) are drawn up front; a step picks
// what it acts on from the state it finds (a pending send, a conversation) by them, so a step
// list stays meaningful when the shrinker drops steps.
type kind int

const (
	kSend kind = iota
	kRetry
	kDeliver
	kSync
	kRead
	kTick
	kEnsure
	kAdvance
	kRepair
	kCrash
	kRedisLose
	kRedisSnapshot
	kRedisRestore
	kMySQLOutage
	kRedisOutage
	kSlowDevice
	kOffline
	kIssueToken
	kRevokeToken
	kChange
	kDeleteSelf
	kAuth
	kSweep
	kMember
	kPoolFull
	kMigrate
	kFailover
	kSendAcrossSwitch
	kFollowUpFault
	kQueueLost
	kListRepair
	kGroupFailover
	kSwitchHalfway
	kGroupOutage
	kinds
)

var kindNames = [kinds]string{
	"send", "retry", "deliver", "sync", "read", "tick", "ensure", "advance", "repair", "crash",
	"redis-lose", "redis-snapshot", "redis-restore", "mysql-outage", "redis-outage", "slow-device", "offline",
	"issue-token", "revoke-token", "change", "delete-self", "auth", "sweep", "member", "pool-full",
	"migrate", "failover", "send-across-switch", "follow-up-fault", "queue-lost", "list-repair",
	"group-failover", "switch-halfway", "group-outage",
}

// weights of the kinds in a random step list.
var weights = [kinds]int{
	kSend: 24, kRetry: 12, kDeliver: 14, kSync: 8, kRead: 5, kTick: 12, kEnsure: 3, kAdvance: 1, kRepair: 2, kCrash: 5,
	kRedisLose: 1, kRedisSnapshot: 1, kRedisRestore: 1, kMySQLOutage: 1, kRedisOutage: 1, kSlowDevice: 2, kOffline: 1,
	kIssueToken: 2, kRevokeToken: 2, kChange: 3, kDeleteSelf: 1, kAuth: 3, kSweep: 3, kMember: 2, kPoolFull: 1,
	kMigrate: 4, kFailover: 1, kSendAcrossSwitch: 1, kFollowUpFault: 2, kQueueLost: 2, kListRepair: 2,
	kGroupFailover: 1, kSwitchHalfway: 1, kGroupOutage: 1,
}

type step struct {
	kind    kind
	node    int
	a, b, c int
}

func (s step) String() string {
	return fmt.Sprintf("%s(node %d, %d, %d, %d)", kindNames[s.kind], s.node, s.a, s.b, s.c)
}

// generate draws n steps from seed.
func generate(seed uint64, n int) []step {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	total := 0
	for _, w := range weights {
		total += w
	}
	steps := make([]step, n)
	for i := range steps {
		x := r.IntN(total)
		k := kind(0)
		for ; x >= weights[k]; k++ {
			x -= weights[k]
		}
		steps[i] = step{kind: k, node: r.IntN(nodeCount), a: r.IntN(1 << 20), b: r.IntN(1 << 20), c: r.IntN(1 << 20)}
	}
	return steps
}

// crashPoints are the port calls a crash may come before, by the step kind that makes them.
// The send path's Redis writes after COMMIT are one call (FollowUp.Apply): a crash before it
// writes none of them; Store.MarkQueued follows a queued job.
var crashPoints = map[kind][]string{
	kSend: {"Seq.Allocate", "Store.Append", "FollowUp.Apply", "Store.MarkQueued", "Store.MaxSeq", "Seq.Reseed",
		"Directory.IsMember", "Months.Now", "Months.Advance", "Shards.EnsureTable", "Months.MarkReady"},
	kDeliver: {"Queue.RequeueStale", "Queue.Take", "Queue.TakeMore", "Dialogs.AppliedSeq", "Directory.Members", "Dialogs.Apply",
		"Queue.MarkDone", "Queue.Ack", "Queue.Retry", "Mailbox.Append"},
	kEnsure: {"Months.Now", "Shards.EnsureTable", "Months.MarkReady", "Locks.Acquire", "Months.Advance", "Shards.Catalog", "Shards.SetState"},
	kRetry:  {"Seq.Allocate", "Store.Append", "FollowUp.Apply", "Store.MarkQueued", "Store.MaxSeq", "Seq.Reseed"},
	kChange: {"Editor.Modify", "Store.Get", "Seq.Allocate", "Store.Append", "FollowUp.Apply", "Hot.Invalidate"},
	kSweep:  {"Shards.Catalog", "Holes.HoleSuspects", "Store.Segments", "Store.Page", "Holes.CloseHole"},
	kMigrate: {"Migrations.Job", "Migrations.Cutover", "Migrations.SetPhase", "Migrations.Rerun", "Migrations.Reverify",
		"Migrations.PrepareTable", "Migrations.Progress", "Shards.Catalog", "Shards.EnsureTable", "Shards.SetState", "Seq.Reseed",
		"Migrations.Watermarks", "Migrations.MarkPrepared", "Migrations.CopyBatch", "Migrations.MonthTopics",
		"Migrations.RecordVerification", "Migrations.Finish"},
}

// exec runs one step.
func (w *world) exec(s step) {
	ctx := context.Background()
	w.stats.steps++
	// A step takes time: what one step does is after what the step before did, also on the
	// clocks that order allocations and month switches.
	w.clock.Advance(time.Millisecond)
	n := w.nodes[s.node]
	switch s.kind {
	case kSend:
		if p, ok := w.newSend(s); ok {
			w.post(n, p, s.c%5 == 0)
		}
	case kSendAcrossSwitch:
		w.sendAcrossSwitch(n, s)
	case kRetry:
		if len(w.model.pending) == 0 {
			return
		}
		i := s.a % len(w.model.pending)
		p := w.model.pending[i]
		w.model.pending = append(w.model.pending[:i], w.model.pending[i+1:]...)
		w.post(n, p, s.c%5 == 0)
	case kDeliver:
		if err := w.runDeliver(s.node); err != nil {
			w.model.violate("deliver: %v", err)
		}
	case kSync:
		u := int64(s.a%userCount) + 1
		ci, ok := w.conversationOf(u, s.b)
		if !ok {
			return
		}
		c := w.model.conversations[ci]
		_ = w.syncDevice(n, deviceKey{u, uint64(s.c%deviceCount) + 1}, c.topic)
	case kRead:
		w.read(n, s)
	case kTick:
		w.clock.Advance(tickOf(s.a, s.b))
	case kEnsure:
		_ = n.manager.Ensure(ctx, tenant)
	case kAdvance:
		if active, ok := w.activeMonth(); ok {
			got, err := n.manager.Advance(ctx, tenant, active.Next())
			w.trace("advance to %s: %s, %v", active.Next(), got, err)
		}
	case kRepair:
		if s.a%2 == 0 {
			_, _ = n.repair.Drain(ctx, tenant)
		} else {
			_, _ = n.repair.Reconcile(ctx, tenant)
		}
	case kCrash:
		points := crashPoints[[]kind{kSend, kDeliver, kEnsure, kRetry, kChange, kSweep, kMigrate}[s.b%7]]
		n.g.method, n.g.n, n.g.seen = points[s.a%len(points)], s.c%2+1, 0
		w.trace("node %d armed to crash at %s #%d", s.node, n.g.method, n.g.n)
		return
	case kRedisLose:
		for i, v := range w.volatile() {
			if s.a%2 == 0 || s.b>>i&1 == 1 {
				v.Lose()
				w.loseLists(v)
			}
		}
		w.stats.faults++
	case kRedisSnapshot:
		w.snapshot = w.snapshot[:0]
		for _, v := range w.volatile() {
			w.snapshot = append(w.snapshot, v.Snapshot())
		}
	case kRedisRestore:
		if len(w.snapshot) == 0 {
			return
		}
		for i, restore := range w.snapshot {
			if s.a%2 == 0 || s.b>>i&1 == 1 {
				restore()
				w.loseLists(w.volatile()[i])
			}
		}
		w.redisRollbacks++
		w.stats.faults++
	case kMySQLOutage:
		w.mysqlDown = !w.mysqlDown
		w.stats.faults++
	case kRedisOutage:
		w.redisDown = !w.redisDown
		w.stats.faults++
	case kSlowDevice:
		k := deviceKey{int64(s.a%userCount) + 1, uint64(s.b%deviceCount) + 1}
		w.slow[k] = !w.slow[k]
		w.stats.faults++
	case kOffline:
		k := deviceKey{int64(s.a%userCount) + 1, uint64(s.b%deviceCount) + 1}
		w.offline[k] = !w.offline[k]
		delete(w.onConn, k)
	case kIssueToken:
		u := int64(s.a%userCount) + 1
		tok := fmt.Sprintf("tok%d", len(w.tokens.claims)+1)
		now := w.clock.Now().UTC()
		w.tokens.claims[tok] = auth.Token{
			Identity: auth.Identity{Tenant: tenant, UserID: u}, ID: tok, IssuedAt: now, ExpiresAt: now.Add(tokenTTL),
		}
		w.model.tokens[u] = append(w.model.tokens[u], tok)
	case kRevokeToken:
		u := int64(s.a%userCount) + 1
		toks := w.model.tokens[u]
		if len(toks) == 0 {
			return
		}
		i := s.b % len(toks)
		// The client's other tab sends requests with the token to a node, before and after.
		tab := s.c % nodeCount
		w.authCheck(w.nodes[tab], tab, toks[i], true)
		if err := n.authn.Logout(ctx, toks[i]); err == nil {
			w.model.revoked = append(w.model.revoked, toks[i])
			w.model.revocations[toks[i]] = revocation{at: w.clock.Now(), node: s.node}
			w.authCheck(w.nodes[tab], tab, toks[i], true)
			w.model.tokens[u] = append(toks[:i], toks[i+1:]...)
		}
	case kAuth:
		// A client connects (AUTH) or sends an HTTP request with one of its live tokens (the
		// node remembers the answer), or with one of the last three revoked, mostly per
		// request (where a node may answer from memory).
		if revoked := w.model.revoked; s.c%3 == 0 && len(revoked) > 0 {
			w.authCheck(n, s.node, revoked[len(revoked)-1-s.b%min(len(revoked), 3)], s.c/3%4 != 0)
		} else if toks := w.model.tokens[int64(s.a%userCount)+1]; len(toks) > 0 {
			w.authCheck(n, s.node, toks[s.b%len(toks)], s.c%2 == 0)
		}
	case kChange:
		w.change(n, s)
	case kPoolFull:
		n.poolFull = !n.poolFull
		w.stats.faults++
	case kMember:
		w.changeMember(n, s)
	case kMigrate:
		w.migrate(n, s)
	case kFailover:
		w.failover(n, s, "month state", w.months.Snapshot)
	case kGroupFailover:
		g := s.b % w.months.Groups()
		w.failover(n, s, fmt.Sprintf("month state of slot group %d", g), func() func() { return w.months.SnapshotGroup(tenant, g) })
	case kSwitchHalfway:
		w.switchHalfway(n, s)
	case kGroupOutage:
		// The master of one slot group goes down, or comes back: the calls on that group's
		// keys fail, the rest of Redis serves (DESIGN §11).
		w.mu.Lock()
		if w.groupDown == noGroup {
			w.groupDown = s.a % w.months.Groups()
		} else {
			w.groupDown = noGroup
		}
		w.mu.Unlock()
		w.stats.faults++
		w.trace("slot group down: %d", w.groupDown)
	case kQueueLost:
		// One partition's queue and processing list are gone, the lists and everything else
		// intact (seed 003 §20 item 13): the list repair must make up for the jobs. The
		// first partition from a that holds jobs loses them.
		for i := range partitions {
			p := (s.a + i) % partitions
			if n := w.queue.LosePartition(tenant, p); n > 0 {
				w.stats.faults++
				w.trace("deliver partition %d lost its %d jobs", p, n)
				break
			}
		}
	case kListRepair:
		rep, err := n.lists.Pass(ctx, tenant)
		w.trace("list repair: %+v, %v", rep, err)
	case kFollowUpFault:
		// Some parts of the node's next follow-up fail alone: a damaged key, or a script error
		// in one part.
		n.g.failParts = followUpParts(s.a%allFollowUpParts + 1)
		w.stats.faults++
		w.trace("node %d: next follow-up fails parts %05b", s.node, n.g.failParts)
	case kSweep:
		closed, err := n.sweeper.Sweep(ctx, tenant)
		w.trace("sweep closed %d seq holes: %v", closed, err)
		if err == nil && !n.g.crashed {
			w.sweptAt = w.clock.Now()
		}
	case kDeleteSelf:
		u := int64(s.a%userCount) + 1
		ci, ok := w.conversationOf(u, s.b)
		if !ok {
			return
		}
		c := w.model.conversations[ci]
		last := w.maxSeq(c.topic)
		if last == 0 {
			return
		}
		low := 1 + int64(s.c)%last
		hi := low + 1 + int64(s.c>>8)%3
		if err := n.modify.DeleteForSelf(ctx, modify.RangeRequest{Tenant: tenant, User: u, Topic: c.topic, Low: low, Hi: hi}); err == nil {
			w.model.hidden[userTopic{u, c.topic}] = append(w.model.hidden[userTopic{u, c.topic}], [2]int64{low, hi})
			w.trace("user %d hid %s [%d, %d)", u, c.topic, low, hi)
		}
	}
	if n.g.crashed {
		w.trace("node %d rebooted", s.node)
		w.reboot(s.node)
	}
}

// tickOf draws a clock advance: mostly short, sometimes past the deliver done TTL, rarely
// past the idempotency record's day.
func tickOf(a, b int) time.Duration {
	switch a % 20 {
	case 0:
		return 24*time.Hour + time.Duration(b%3600)*time.Second
	case 1, 2:
		return doneTTL + time.Duration(b%1200)*time.Second
	case 3, 4, 5:
		return time.Duration(b%600) * time.Second
	}
	return time.Duration(b%2000) * time.Millisecond
}

// conversationOf picks one of the user's conversations by b (none: the user is in none).
func (w *world) conversationOf(u int64, b int) (int, bool) {
	convs := w.conversationsOf(u)
	if len(convs) == 0 {
		return 0, false
	}
	return convs[b%len(convs)], true
}

func (w *world) conversationsOf(u int64) []int {
	var out []int
	for i, c := range w.model.conversations {
		for _, m := range c.members {
			if m == u {
				out = append(out, i)
			}
		}
	}
	return out
}

// post sends (or resends) p through node n; without an ACK, or with the ACK lost on the way
// back (lost), the client keeps it for a retry.
func (w *world) post(n *node, p pendingSend, lost bool) {
	c := w.model.conversations[p.conv]
	addr := conversation.Address{Topic: c.topic}
	if c.p2p {
		addr = conversation.Address{ToUser: c.members[0] + c.members[1] - p.key.from}
	}
	if n.poolFull {
		// The transport's bounded task pool refuses the frame before the core sees it (50301).
		w.trace("send %v: 50301 task pool full", p.key)
		w.model.pending = append(w.model.pending, p)
		return
	}
	if first, ok := w.model.firstStored[p.key]; ok && !w.clock.Now().Before(first.Add(dedupRetention)) {
		w.model.pastRetention[p.key] = true
		w.trace("send %v: a retry past the dedup retention (first stored %s)", p.key, first.Format(time.RFC3339))
	}
	content, _ := json.Marshal(map[string]string{"text": p.text})
	res, err := n.send.Send(context.Background(), send.Request{
		Tenant: tenant, From: p.key.from, FromDevice: p.device, Address: addr,
		Draft: message.Draft{ClientMsgID: p.key.cmid, Type: "text", Content: content},
	})
	if err != nil {
		w.trace("send %v: %v", p.key, err)
		w.model.pending = append(w.model.pending, p)
		return
	}
	m := res.Message
	w.trace("send %v: ACK msg_id %d seq %d month %s", p.key, m.MsgID, m.Seq, m.Month)
	if m.Topic != p.key.topic || m.From != p.key.from || m.ClientMsgID != p.key.cmid {
		w.model.violate("send %v ACKed another message: %s/%d/%s", p.key, m.Topic, m.From, m.ClientMsgID)
	}
	w.model.acknowledged(p.key, ack{msgID: m.MsgID, seq: m.Seq, month: m.Month})
	// A node that crashed in an after-commit call never wrote the ACK out.
	if lost || n.g.crashed {
		w.model.pending = append(w.model.pending, p)
	}
}

// read has a member catch up on a conversation and mark its newest message read, as a client
// does once it shows the messages. It waits for a healthy system with nothing left to deliver,
// so that no older message reaches the lists after the read.
func (w *world) read(n *node, s step) {
	if w.mysqlDown || w.redisDown || n.g.method != "" {
		return
	}
	w.drain()
	if w.queued() > 0 {
		return
	}
	u := int64(s.a%userCount) + 1
	ci, ok := w.conversationOf(u, s.b)
	if !ok {
		return
	}
	c := w.model.conversations[ci]
	last, err := w.store.MaxSeq(context.Background(), tenant, c.topic)
	if err != nil || last == 0 {
		return
	}
	if s.c%4 == 0 {
		// A device that lags behind reads an older message: the watermark must stay.
		last = 1 + int64(s.b)%last
	}
	_, _ = n.read.Read(context.Background(), read.Request{Tenant: tenant, User: u, Device: uint64(s.c%deviceCount) + 1, Topic: c.topic, Seq: last})
	// A read clears the count of what the lists hold by now (whether or not the call got that
	// far): checkLists expects only what is applied after it to be counted.
	applied, _ := w.dialogs.AppliedSeq(context.Background(), tenant, c.id)
	k := userTopic{u, c.topic}
	w.model.cleared[k] = max(w.model.cleared[k], applied)
}

// change recalls, edits or deletes for everyone one of the user's ACKed messages (recalls
// only work within the recall window, so most are refused after a while).
func (w *world) change(n *node, s step) {
	u := int64(s.a%userCount) + 1
	var own []sendKey
	for _, k := range w.model.ackOrder {
		if k.from == u {
			own = append(own, k)
		}
	}
	if len(own) == 0 {
		return
	}
	k := own[s.b%len(own)]
	a := w.model.acked[k]
	t := modify.Target{Tenant: tenant, User: u, Device: w.model.sentFrom[k], Topic: k.topic, Seq: a.seq}
	ctx := context.Background()
	var err error
	switch s.c % 3 {
	case 0:
		_, err = n.modify.Recall(ctx, t)
	case 1:
		content, _ := json.Marshal(map[string]string{"text": fmt.Sprintf("edited %d", s.c)})
		_, err = n.modify.Edit(ctx, modify.EditRequest{Target: t, Content: content})
	case 2:
		// Even a failed attempt may have deleted it before the node crashed.
		w.model.deleted[k] = true
		_, err = n.modify.DeleteForAll(ctx, t)
	}
	w.trace("change %d of %v: %v", s.c%3, k, err)
}

// changeMember adds a user to a group or removes one (never its owner), as the admin API
// does; the model keeps when each user was a member.
func (w *world) changeMember(n *node, s step) {
	ctx := context.Background()
	ci := s.a % 2 // the groups come first
	c := &w.model.conversations[ci]
	u := int64(s.b%userCount) + 1
	if u == c.members[0] {
		return
	}
	k := userTopic{u, c.topic}
	spans := w.model.spans[k]
	if i := slices.Index(c.members, u); i >= 0 {
		if err := n.groups.RemoveMember(ctx, tenant, directory.Operator, c.group, u); err != nil {
			w.trace("remove %d from %s: %v", u, c.topic, err)
			return
		}
		c.members = slices.Delete(c.members, i, i+1)
		spans[len(spans)-1].to, spans[len(spans)-1].removedAt = w.stats.steps, w.clock.Now()
		w.trace("removed %d from %s", u, c.topic)
		return
	}
	if err := n.groups.AddMembers(ctx, tenant, directory.Operator, c.group, []int64{u}); err != nil {
		w.trace("add %d to %s: %v", u, c.topic, err)
		return
	}
	c.members = append(c.members, u)
	w.model.spans[k] = append(spans, memberSpan{from: w.stats.steps, to: -1})
	w.trace("added %d to %s", u, c.topic)
}

// authCheck presents a token to a node, on a connection's AUTH or per request, and has the
// model judge an acceptance.
func (w *world) authCheck(n *node, node int, tok string, perRequest bool) {
	check := n.authn.Authenticate
	if perRequest {
		check = n.authn.AuthenticateRequest
	}
	_, err := check(context.Background(), tok)
	w.trace("auth on node %d with %s (per request %v): %v", node, tok, perRequest, err)
	if err == nil {
		w.model.checkAuth(tok, node, perRequest, w.clock.Now())
	}
}

// newSend is a new message of step s, none when its user is in no conversation.
func (w *world) newSend(s step) (pendingSend, bool) {
	u := int64(s.a%userCount) + 1
	ci, ok := w.conversationOf(u, s.b)
	if !ok {
		return pendingSend{}, false
	}
	w.model.nextCMID++
	p := pendingSend{
		key:    sendKey{w.model.conversations[ci].topic, u, fmt.Sprintf("c%d", w.model.nextCMID)},
		device: uint64(s.c%deviceCount) + 1, conv: ci, text: fmt.Sprintf("m%d", w.model.nextCMID),
	}
	w.model.sentFrom[p.key] = p.device
	return p, true
}

// sendAcrossSwitch is a send in flight across an early month switch: another node advances the
// month between the send's allocation and its write. The write is taken in the month before
// (000 §12 item 15: seqs 1..N across a switch, no hole; gatedStore.AppendFresh checks it).
func (w *world) sendAcrossSwitch(n *node, s step) {
	p, ok := w.newSend(s)
	if !ok {
		return
	}
	other := w.nodes[(s.node+1+s.a%(nodeCount-1))%nodeCount]
	n.g.beforeAppend = func() {
		if active, ok := w.activeMonth(); ok {
			got, err := other.manager.Advance(context.Background(), tenant, active.Next())
			w.trace("advance to %s while %v is in flight: %s, %v", active.Next(), p.key, got, err)
		}
	}
	w.post(n, p, s.c%5 == 0)
	n.g.beforeAppend = nil
}

// failover is an early month switch that a Redis failover loses: node n advances the month,
// the month state lost (snapshot: all of it, or one slot group's, whose master alone failed
// over while the other groups keep the switch, DESIGN §7.2) goes back to before the advance
// (the replica missed it), and another node restarts, so a process that has seen nothing of
// the switch serves sends next (issue 19 item 1 across nodes). The catalog keeps the switch.
func (w *world) failover(n *node, s step, lost string, snapshot func() (restore func())) {
	active, ok := w.activeMonth()
	if !ok {
		return
	}
	restore := snapshot()
	got, err := n.manager.Advance(context.Background(), tenant, active.Next())
	w.trace("advance to %s: %s, %v", active.Next(), got, err)
	restore()
	w.stats.faults++
	if other := (s.node + 1 + s.a%(nodeCount-1)) % nodeCount; !w.nodes[other].g.crashed {
		w.trace("%s rolled back to before the advance; node %d restarts", lost, other)
		w.reboot(other)
	}
}

// switchHalfway is an early month switch whose node dies halfway across the slot groups: before
// its k-th call that makes them ready, schedules or makes their switch, so some groups have
// learnt the month and the others have not (DESIGN §7.2). The node restarts at the step's end.
func (w *world) switchHalfway(n *node, s step) {
	active, ok := w.activeMonth()
	if !ok {
		return
	}
	groups := w.months.Groups()
	// The advance's reconcile first marks ready and advances every group to the catalog's
	// floor: the switch's own calls of those two come after.
	point := []struct {
		method string
		before int
	}{{"Months.MarkReady", groups}, {"Months.SwitchAt", 0}, {"Months.Advance", groups}}[s.a%3]
	n.g.method, n.g.n, n.g.seen = point.method, point.before+2+s.c%(groups-1), 0
	got, err := n.manager.Advance(context.Background(), tenant, active.Next())
	w.trace("advance to %s dying at %s #%d: %s, %v", active.Next(), n.g.method, n.g.n, got, err)
	if !n.g.crashed {
		n.g.method = "" // it got through: the call was never made that often
	}
}
