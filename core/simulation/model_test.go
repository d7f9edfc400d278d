package simulation

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/imdhq/imd/core/domain/dialog"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/seq"
	"github.com/imdhq/imd/core/usecase/authn"
	"github.com/imdhq/imd/core/usecase/history"
	"github.com/imdhq/imd/core/usecase/inbox"
)

// sendKey is what makes two sends the same message: (topic, sender, client_msg_id).
type sendKey struct {
	topic string
	from  int64
	cmid  string
}

// ack is what a SEND_ACK said.
type ack struct {
	msgID, seq int64
	month      month.Month
}

// pendingSend is a message a client sent without getting an ACK (or whose ACK it lost); it
// retries with the same client_msg_id and content.
type pendingSend struct {
	key    sendKey
	device uint64
	conv   int
	text   string
}

type topicSeq struct {
	topic string
	seq   int64
}

type userConv struct {
	user int64
	conv int64
}

// pushes counts the live pushes of one message to one device, and the Redis rollbacks seen
// at the first: a rollback legitimately brings a handled job back.
type pushes struct{ n, rollbacks int }

// model is what the clients saw and what the invariants compare the fakes with.
type model struct {
	conversations []conversationSpec
	nextCMID      int
	pending       []pendingSend
	sentFrom      map[sendKey]uint64 // the device that sent the message
	acked         map[sendKey]ack
	// firstStored: when the first row of each send was stored; pastRetention: a retry of it
	// came dedupRetention or more after that, when the product lets it be a second copy
	// (README: a resend later than the dedup record's retention is a new message).
	firstStored   map[sendKey]time.Time
	pastRetention map[sendKey]bool
	secondCopies  int // retries past the retention that were stored as a second copy
	ackOrder      []sendKey
	seqOwner      map[topicSeq]int64 // the msg_id first seen stored at a seq
	maxActive     month.Month        // of new allocations and of the active months Redis held
	// activeSeen: the first instant each month was seen active (Redis held it, an advance
	// returned it, or a new allocation got it). A message allocated in an older month after
	// that instant must never be stored: the active month went back for it.
	activeSeen  map[month.Month]time.Time
	watermarks  map[userConv]int64
	tokens      map[int64][]string // live tokens per user
	revoked     []string           // tokens whose revocation was acknowledged
	revocations map[string]revocation
	live        map[deviceKey]map[int64]pushes
	seen        map[deviceKey]map[int64]bool // msg_ids a device has, live or by sync
	cursors     map[deviceKey]map[string]*deviceTopic
	deleted     map[sendKey]bool         // ACKed messages deleted for everyone
	hidden      map[userTopic][][2]int64 // seq ranges [low, hi) users deleted for themselves
	storedAt    map[int64]int64          // the step that committed each msg_id
	spans       map[userTopic][]memberSpan
	// cleared is, per user and topic, the newest seq the lists had applied at the user's
	// last read, which clears the count (checkLists).
	cleared    map[userTopic]int64
	violations []string
}

type userTopic struct {
	user  int64
	topic string
}

// memberSpan is a stretch of steps a user was a member of a conversation: from the step that
// added it (-1: from the start) to the one that removed it (-1: still a member), and when.
type memberSpan struct {
	from, to  int64
	removedAt time.Time
}

// mayReceive reports whether a message committed at step may reach the user: the user was a
// member then, or is one now (a group's history is open to its members: a sync of a new
// member returns it too, and a fan-out resolves the members when it runs), or was removed less
// than the member cache's TTL before now (another node's cache may still name it, by design).
func (m *model) mayReceive(user int64, topic string, step int64, now time.Time) bool {
	for _, s := range m.spans[userTopic{user, topic}] {
		if s.to < 0 || step > s.from && step < s.to || now.Sub(s.removedAt) < memberTTL {
			return true
		}
	}
	return false
}

// hides reports whether the user deleted seq for themself.
func (m *model) hides(user int64, topic string, seq int64) bool {
	for _, r := range m.hidden[userTopic{user, topic}] {
		if seq >= r[0] && seq < r[1] {
			return true
		}
	}
	return false
}

func newModel() model {
	return model{
		activeSeen: map[month.Month]time.Time{}, firstStored: map[sendKey]time.Time{}, pastRetention: map[sendKey]bool{},
		sentFrom: map[sendKey]uint64{}, acked: map[sendKey]ack{}, seqOwner: map[topicSeq]int64{},
		watermarks: map[userConv]int64{}, tokens: map[int64][]string{}, revocations: map[string]revocation{}, live: map[deviceKey]map[int64]pushes{},
		seen: map[deviceKey]map[int64]bool{}, cursors: map[deviceKey]map[string]*deviceTopic{},
		deleted: map[sendKey]bool{}, hidden: map[userTopic][][2]int64{}, storedAt: map[int64]int64{},
		spans: map[userTopic][]memberSpan{}, cleared: map[userTopic]int64{},
	}
}

func (m *model) violate(format string, args ...any) {
	m.violations = append(m.violations, fmt.Sprintf(format, args...))
}

// livePush records a MESSAGE push to a device (called by the pusher).
func (m *model) livePush(w *world, k deviceKey, msg message.Message) {
	key := sendKey{msg.Topic, msg.From, msg.ClientMsgID}
	if dev, ok := m.sentFrom[key]; ok && k.user == msg.From && k.device == dev {
		m.violate("message %d (%s seq %d) pushed back to its sending device %d/%d", msg.MsgID, msg.Topic, msg.Seq, k.user, k.device)
	}
	byMsg := m.live[k]
	if byMsg == nil {
		byMsg = map[int64]pushes{}
		m.live[k] = byMsg
	}
	if at, ok := m.storedAt[msg.MsgID]; ok && !m.mayReceive(k.user, msg.Topic, at, w.clock.Now()) {
		m.violate("message %d (%s seq %d, stored at step %d) pushed to device %d/%d of a user who was not a member then nor is now",
			msg.MsgID, msg.Topic, msg.Seq, at, k.user, k.device)
	}
	p := byMsg[msg.MsgID]
	if p.n > 0 && p.rollbacks == w.redisRollbacks {
		m.violate("message %d (%s seq %d) pushed %d times to device %d/%d", msg.MsgID, msg.Topic, msg.Seq, p.n+1, k.user, k.device)
	}
	if p.n == 0 {
		p.rollbacks = w.redisRollbacks
	}
	p.n++
	byMsg[msg.MsgID] = p
	m.see(k, msg.MsgID)
}

func (m *model) see(k deviceKey, msgID int64) {
	if m.seen[k] == nil {
		m.seen[k] = map[int64]bool{}
	}
	m.seen[k][msgID] = true
}

// allocated sees every new allocation of the seq script: the active month it allocates in
// never moves backward for a process that saw the newer one (month.Floors). A Redis behind
// the catalog (rolled back past an early switch, or an advance that died between the catalog
// and Redis) hands a process that saw nothing of the switch the month before; the write
// transaction then refuses the message (shard.ErrMonthBehind, checked by gatedStore.stored:
// no new row allocated in a month older than one seen active before the allocation) and the
// send repairs the month and allocates again.
func (m *model) allocated(w *world, g *gate, a seq.Allocation) {
	m.seeActive(a.Month, a.At)
	if a.Month < m.maxActive {
		if g.sawMonth >= m.maxActive {
			m.violate("active month moved back from %s to %s: seq %d allocated in it", m.maxActive, a.Month, a.Seq)
		} else {
			w.trace("stale month %s handed to a process that never saw %s: seq %d", a.Month, m.maxActive, a.Seq)
		}
	}
	m.maxActive = max(m.maxActive, a.Month)
	g.sawMonth = max(g.sawMonth, a.Month)
}

// seeActive notes that mo was the active month at instant at.
func (m *model) seeActive(mo month.Month, at time.Time) {
	if first, ok := m.activeSeen[mo]; !ok || at.Before(first) {
		m.activeSeen[mo] = at
	}
}

// storedBehind reports the newer month seen active before a fresh allocation at instant at in
// mo, zero when none was.
func (m *model) storedBehind(mo month.Month, at time.Time) month.Month {
	var newer month.Month
	for n, seen := range m.activeSeen {
		if n > mo && n > newer && seen.Before(at) {
			newer = n
		}
	}
	return newer
}

// acknowledged records a SEND_ACK; a retry of a message ACKed before must get the same one.
func (m *model) acknowledged(key sendKey, a ack) {
	if prev, ok := m.acked[key]; ok {
		if prev != a && m.pastRetention[key] {
			m.secondCopies++ // its first ACK keeps being checked; the copy is another message
			return
		}
		if prev != a {
			m.violate("retry of %v ACKed %+v, first ACK was %+v", key, a, prev)
		}
		return
	}
	m.acked[key] = a
	m.ackOrder = append(m.ackOrder, key)
}

// check runs the invariants that hold after every step.
func (w *world) check() {
	ctx := context.Background()
	w.stats.checks++
	m := &w.model
	// An advance moves the month without allocating: what Redis held is the least later
	// allocations may use.
	if active, ok := w.activeMonth(); ok {
		m.maxActive = max(m.maxActive, active)
		m.seeActive(active, w.clock.Now())
	}
	// So is the catalog's newest writable month: an early switch writes it there first, and a
	// failover may take it out of Redis again.
	m.maxActive = max(m.maxActive, w.newestWritable())
	for _, c := range m.conversations {
		w.checkTopic(c.topic)
	}
	w.checkLegacy()
	for _, c := range m.conversations {
		for _, u := range c.members {
			states, err := w.reads.States(ctx, tenant, u, []int64{c.id})
			if err != nil || len(states) == 0 {
				continue
			}
			k := userConv{u, c.id}
			if got := states[0].ReadSeq; got < m.watermarks[k] {
				m.violate("read watermark of user %d in %s went back from %d to %d", u, c.topic, m.watermarks[k], got)
			} else {
				m.watermarks[k] = got
			}
		}
	}
	if len(m.revoked) > 0 {
		auth := authn.New(authn.Config{MaxTTL: tokenTTL}, authn.Deps{
			Tokens: w.tokens, Revocations: w.revocations,
			Tenants: func(string) bool { return true }, Users: w.dir, Clock: w.clock,
		})
		for _, tok := range m.revoked {
			if _, err := auth.Authenticate(ctx, tok); err == nil {
				m.violate("revoked token %s is accepted again", tok)
			}
		}
	}
}

// storedRows reads every row of a topic, tombstones included, month by month.
func (w *world) storedRows(topic string) map[month.Month][]message.Message {
	ctx := context.Background()
	infos, err := w.shards.Catalog(ctx, tenant)
	if err != nil {
		w.model.violate("catalog unreadable: %v", err)
		return nil
	}
	out := map[month.Month][]message.Message{}
	for _, info := range infos {
		var after int64
		for {
			page, err := w.store.Page(ctx, tenant, info.Month, message.PageQuery{Topic: topic, After: after, Limit: 500, IncludeDeleted: true})
			if err != nil {
				w.model.violate("month %s unreadable: %v", info.Month, err)
				break
			}
			out[info.Month] = append(out[info.Month], page...)
			if len(page) < 500 {
				break
			}
			after = page[len(page)-1].Seq
		}
	}
	return out
}

// checkTopic: every ACKed message stored once at its seq, month and msg_id; a seq never
// changes hands; no two months share a seq and months never go back along the seqs; no
// client_msg_id is stored twice.
func (w *world) checkTopic(topic string) {
	m := &w.model
	byMonth := w.storedRows(topic)
	type row struct {
		month month.Month
		msg   message.Message
	}
	bySeq := map[int64]row{}
	byKey := map[sendKey]message.Message{}
	for mo, rows := range byMonth {
		for _, r := range rows {
			if prev, dup := bySeq[r.Seq]; dup {
				m.violate("%s seq %d stored in both %s and %s", topic, r.Seq, prev.month, mo)
			}
			bySeq[r.Seq] = row{mo, r}
			ts := topicSeq{topic, r.Seq}
			if owner, ok := m.seqOwner[ts]; !ok {
				m.seqOwner[ts] = r.MsgID
			} else if owner != r.MsgID {
				m.violate("%s seq %d held msg_id %d, now %d", topic, r.Seq, owner, r.MsgID)
			}
			if r.Status == message.StatusDeleted {
				continue
			}
			k := sendKey{topic, r.From, r.ClientMsgID}
			// Past the dedup record's retention a resend is a new message (README), so two rows
			// of one client_msg_id are right only that far apart.
			if other, dup := byKey[k]; dup && absDuration(r.CreatedAt.Sub(other.CreatedAt)) < dedupRetention {
				m.violate("client_msg_id %q of user %d stored twice in %s: seqs %d and %d", r.ClientMsgID, r.From, topic, other.Seq, r.Seq)
			}
			byKey[k] = r
		}
	}
	seqs := make([]int64, 0, len(bySeq))
	for s := range bySeq {
		seqs = append(seqs, s)
	}
	slices.Sort(seqs)
	for i := 1; i < len(seqs); i++ {
		if a, b := bySeq[seqs[i-1]], bySeq[seqs[i]]; b.month < a.month {
			m.violate("%s month segments overlap: seq %d in %s after seq %d in %s", topic, seqs[i], b.month, seqs[i-1], a.month)
		}
	}
	w.checkHoles(topic, seqs, func(sq int64) (month.Month, message.Message) { r := bySeq[sq]; return r.month, r.msg })
	for _, k := range m.ackOrder {
		if k.topic != topic {
			continue
		}
		a := m.acked[k]
		r, ok := bySeq[a.seq]
		switch {
		case !ok:
			m.violate("ACKed message %v (seq %d) is not stored", k, a.seq)
		case r.msg.MsgID != a.msgID || r.month != a.month || r.msg.Status == message.StatusDeleted && !m.deleted[k]:
			m.violate("ACKed message %v %+v is stored as msg_id %d in %s, status %s", k, a, r.msg.MsgID, r.month, r.msg.Status)
		}
	}
}

// syncDevice catches a device up on one conversation by SYNC_MESSAGES, as DESIGN §4 has a
// client do: a gap means "not yet", so the device's cursor stays below the first seq it has
// not seen, and the next sync asks from there again.
func (w *world) syncDevice(n *node, k deviceKey, topic string) error {
	ctx := context.Background()
	d := w.model.device(k, topic)
	since := d.cursor
	for range 50 {
		res, err := n.history.Sync(ctx, history.SyncRequest{Tenant: tenant, User: k.user, Topic: topic, Since: since, Limit: history.MaxLimit})
		if err != nil {
			return err
		}
		last := since
		for _, msg := range res.Messages {
			if msg.Seq <= last {
				w.model.violate("sync of %s after %d returned seq %d out of order", topic, since, msg.Seq)
			}
			last = msg.Seq
			d.have[msg.Seq] = true
			w.model.see(k, msg.MsgID)
		}
		since = res.LastSeq
		if !res.HasMore {
			break
		}
	}
	from := d.cursor
	// Seqs the user deleted for themself never come back; the client knows its own ranges.
	for d.have[d.cursor+1] || w.model.hides(k.user, topic, d.cursor+1) {
		d.cursor++
	}
	if d.cursor != from {
		w.trace("device %d/%d synced %s from %d to %d", k.user, k.device, topic, from, d.cursor)
	}
	return nil
}

// deviceTopic is what a device holds of one topic.
type deviceTopic struct {
	have   map[int64]bool // seqs it got by sync
	cursor int64          // every seq up to it is held
}

func (m *model) device(k deviceKey, topic string) *deviceTopic {
	if m.cursors[k] == nil {
		m.cursors[k] = map[string]*deviceTopic{}
	}
	d := m.cursors[k][topic]
	if d == nil {
		d = &deviceTopic{have: map[int64]bool{}}
		m.cursors[k][topic] = d
	}
	return d
}

// heal ends every fault, reboots crashed nodes, lets delivery finish and every device catch
// up, then checks what only holds once the system settled: every ACKed message reached every
// device of its members but the sending one, and no unread count is above the messages after
// the read watermark.
func (w *world) heal() {
	ctx := context.Background()
	w.mysqlDown, w.redisDown, w.groupDown = false, false, noGroup
	clear(w.slow)
	for i, n := range w.nodes {
		n.poolFull = false
		if n.g.crashed || n.g.method != "" {
			w.reboot(i)
		}
	}
	n := w.nodes[0]
	if err := n.manager.Ensure(ctx, tenant); err != nil {
		w.model.violate("shard manager failed after healing: %v", err)
	}
	// What the background loops of a node do within minutes: the repair queue and the
	// sampled reconciliation, which finds a route Redis rolled back.
	if _, err := n.repair.Drain(ctx, tenant); err != nil {
		w.model.violate("route repair failed after healing: %v", err)
	}
	if _, err := n.repair.Reconcile(ctx, tenant); err != nil {
		w.model.violate("route reconciliation failed after healing: %v", err)
	}
	w.drain()
	// The sweeper's loop, once every retry is over: no hole is left for a sync to wait on.
	w.clock.Advance(holeAfter + time.Second)
	if _, err := n.sweeper.Sweep(ctx, tenant); err != nil {
		w.model.violate("seq-hole sweep failed after healing: %v", err)
	} else {
		w.sweptAt = w.clock.Now()
	}
	for _, c := range w.model.conversations {
		last := w.maxSeq(c.topic)
		for _, u := range c.members {
			for d := uint64(1); d <= deviceCount; d++ {
				k := deviceKey{u, d}
				if err := w.syncDevice(n, k, c.topic); err != nil {
					w.model.violate("device %d/%d cannot sync %s after healing: %v", u, d, c.topic, err)
				}
				if at := w.model.device(k, c.topic).cursor; at < last {
					w.model.violate("device %d/%d waits in %s at seq %d of %d after healing: a seq hole was never closed", u, d, c.topic, at+1, last)
				}
			}
		}
	}
	for _, k := range w.model.ackOrder {
		a := w.model.acked[k]
		c := w.conversation(k.topic)
		for _, u := range c.members {
			for d := uint64(1); d <= deviceCount; d++ {
				dk := deviceKey{u, d}
				if u == k.from && d == w.model.sentFrom[k] || w.model.hides(u, k.topic, a.seq) {
					continue
				}
				if !w.model.seen[dk][a.msgID] {
					w.model.violate("ACKed message %v (msg_id %d) never reached device %d/%d", k, a.msgID, u, d)
				}
			}
		}
	}
	for _, u := range []int64{2, 6} {
		if err := w.syncLegacy(n, u); err != nil {
			w.model.violate("user %d cannot sync the legacy group after healing: %v", u, err)
		}
	}
	w.checkUnread(n)
	w.repairLists(n)
	w.check()
}

// repairLists runs what a node's list repair does within a minute once the gaps are settled,
// then checks the lists converged to MySQL (checkLists).
func (w *world) repairLists(n *node) {
	w.clock.Advance(repairSettle)
	for range 5 {
		rep, err := n.lists.Pass(context.Background(), tenant)
		w.trace("list repair after healing: %+v, %v", rep, err)
		if err != nil {
			w.model.violate("list repair failed after healing: %v", err)
			return
		}
	}
	w.checkLists()
}

// checkLists: a deliver job the queue lost costs the lists nothing once the repair ran (seed
// 003 §20 item 13, issue 33). Each member who never left a conversation finds it in its list
// at its newest message stored within the repair window, and an unread count that holds every
// message of others stored within the window after both the read watermark and what the lists
// held at the member's last read (which clears the count). Messages stored before Redis last
// lost or rolled back the lists are left out: the rebuild counts them its own way.
func (w *world) checkLists() {
	ctx := context.Background()
	since := w.clock.Now().Add(-repairWindow)
	if w.listsLostAt.After(since) {
		since = w.listsLostAt
	}
	for _, c := range w.model.conversations {
		var rows []message.Message
		var newest int64
		for _, month := range w.storedRows(c.topic) {
			for _, r := range month {
				if r.Status != message.StatusDeleted && r.CreatedAt.After(since) {
					rows = append(rows, r)
					newest = max(newest, r.Seq)
				}
			}
		}
		if newest == 0 {
			continue
		}
		for _, u := range c.members {
			if spans := w.model.spans[userTopic{u, c.topic}]; len(spans) != 1 || spans[0].from != -1 || spans[0].to != -1 {
				continue // joined or left: its list follows its membership, not every message
			}
			entries, err := w.dialogs.Changed(ctx, tenant, u, 0, 100)
			states, err2 := w.reads.States(ctx, tenant, u, []int64{c.id})
			if err != nil || err2 != nil || len(states) != 1 {
				w.model.violate("lists of user %d unreadable after healing: %v, %v", u, err, err2)
				continue
			}
			i := slices.IndexFunc(entries, func(e dialog.Entry) bool { return e.ConversationID == c.id })
			if i < 0 {
				w.model.violate("user %d's list misses %s, which holds seq %d", u, c.topic, newest)
				continue
			}
			e := entries[i]
			if e.Preview.Seq < newest {
				w.model.violate("user %d's list shows %s at seq %d, but seq %d is stored", u, c.topic, e.Preview.Seq, newest)
			}
			floor := max(states[0].ReadSeq, w.model.cleared[userTopic{u, c.topic}])
			var want int64
			for _, r := range rows {
				if r.Seq > floor && r.From != u && dialog.CountsAsUnread(r) {
					want++
				}
			}
			if e.Unread < want {
				w.model.violate("user %d has %d unread in %s, but %d messages of others follow seq %d (watermark %d)", u, e.Unread, c.topic, want, floor, states[0].ReadSeq)
			}
		}
	}
}

// drain runs deliver passes until the queue is empty (jobs retried count as left).
func (w *world) drain() {
	i := slices.IndexFunc(w.nodes, func(n *node) bool { return n.g.method == "" })
	if i < 0 {
		return
	}
	for range 20 {
		if err := w.runDeliver(i); err != nil {
			w.model.violate("deliver: %v", err)
			return
		}
		if w.queued() == 0 {
			return
		}
	}
}

func (w *world) queued() int { return w.queue.Queued(tenant) }

func (w *world) conversation(topic string) conversationSpec {
	for _, c := range w.model.conversations {
		if c.topic == topic {
			return c
		}
	}
	return conversationSpec{}
}

// checkUnread compares each user's unread counts (SYNC_INBOX) with the messages of others
// stored after the user's read watermark: a count above it counted a message twice.
func (w *world) checkUnread(n *node) {
	ctx := context.Background()
	for u := int64(1); u <= userCount; u++ {
		var score int64
		for range 20 {
			res, err := n.inbox.Sync(ctx, inbox.SyncRequest{Tenant: tenant, User: u, Device: 1, DialogScore: score, MailboxSeq: 1 << 62})
			if err != nil {
				w.model.violate("inbox of user %d unreadable after healing: %v", u, err)
				return
			}
			for _, d := range res.Dialogs {
				want := w.unreadAfter(u, d.Topic, d.ReadSeq)
				if w.listsLost {
					// A rebuilt count also counts the user's own messages and tombstones
					// (dialog.State.Unread): bounded by every seq after the watermark.
					want = max(0, w.maxSeq(d.Topic)-d.ReadSeq)
				}
				if d.Unread > want {
					w.model.violate("user %d has %d unread in %s, but only %d messages of others follow the watermark %d", u, d.Unread, d.Topic, want, d.ReadSeq)
				}
			}
			score = res.DialogScore
			if !res.HasMore {
				break
			}
		}
	}
}

func (w *world) maxSeq(topic string) int64 {
	n, _ := w.store.MaxSeq(context.Background(), tenant, topic)
	return n
}

func (w *world) unreadAfter(user int64, topic string, watermark int64) int64 {
	var n int64
	for _, rows := range w.storedRows(topic) {
		for _, r := range rows {
			if r.Seq > watermark && r.From != user && r.Status != message.StatusDeleted && dialog.CountsAsUnread(r) {
				n++
			}
		}
	}
	return n
}

// checkHoles: seq holes are only transient (DESIGN §4). A hole is closed by the sweeper once
// the message after it is older than holeAfter, in a month that still takes writes, so after
// a sweep that ran through no older one is left.
func (w *world) checkHoles(topic string, seqs []int64, row func(int64) (month.Month, message.Message)) {
	if w.sweptAt.IsZero() {
		return
	}
	bound := w.sweptAt.Add(-holeAfter)
	var prev int64
	for _, sq := range seqs {
		if sq > prev+1 {
			mo, next := row(sq)
			if next.CreatedAt.Before(bound) && w.takesWrites(mo) {
				w.model.violate("%s seqs %d-%d are a hole the sweep at %s left open (seq %d after it stored in %s at %s)",
					topic, prev+1, sq-1, w.sweptAt.Format(time.RFC3339), sq, mo, next.CreatedAt.Format(time.RFC3339))
			}
		}
		prev = sq
	}
}

func (w *world) takesWrites(m month.Month) bool {
	infos, _ := w.shards.Catalog(context.Background(), tenant)
	for _, info := range infos {
		if info.Month == m {
			return info.State.AcceptsWrites()
		}
	}
	return false
}

// revocation is when and through which node a logout was acknowledged.
type revocation struct {
	at   time.Time
	node int
}

// checkAuth judges a check that accepted a revoked token: a connection's AUTH never may; a
// per-request check may on another node for recentRevocationTTL after the logout, never on
// the node that made it, never later.
func (m *model) checkAuth(tok string, node int, perRequest bool, now time.Time) {
	r, ok := m.revocations[tok]
	switch {
	case !ok:
	case !perRequest:
		m.violate("revoked token %s is accepted again by AUTH on node %d", tok, node)
	case node == r.node:
		m.violate("revoked token %s is accepted again per request by node %d, which revoked it", tok, node)
	case now.Sub(r.at) >= recentRevocationTTL:
		m.violate("revoked token %s is accepted per request by node %d %v after its logout on node %d", tok, node, now.Sub(r.at), r.node)
	}
}

func absDuration(d time.Duration) time.Duration { return max(d, -d) }
