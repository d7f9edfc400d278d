package e2e

// The acceptance list of the month-sharding plan (seed 000 §12), each item a test named after
// it, against the real binary, MariaDB and Redis. Items that belong to later capabilities
// (reply context, recall/edit references, dellog, hot cache, migration) live with them.

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/redis"
	"github.com/imdhq/imd/adapters/snowflake"
	"github.com/imdhq/imd/clients/go/client"
	"github.com/imdhq/imd/clients/go/wire"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/seq"
)

// chat is a group with connected members.
type chat struct {
	topic string
	conns []*client.Conn
}

func newChat(t *testing.T, srv *Server, ctx context.Context, groupID int64, users int, online int) chat {
	t.Helper()
	ids := make([]int64, users)
	tokens := make([]string, users)
	for i := range users {
		ids[i] = groupID*10_000 + int64(i) + 1
		tokens[i] = srv.User(ids[i])
	}
	c := chat{topic: srv.Group(groupID, ids[0], ids[1:]...)}
	for i := range online {
		c.conns = append(c.conns, srv.Connect(ctx, tokens[i], 1))
	}
	return c
}

func sendN(t *testing.T, ctx context.Context, c *client.Conn, topic, prefix string, n int) []wire.SendAck {
	t.Helper()
	acks := make([]wire.SendAck, n)
	for i := range n {
		ack, err := c.Send(ctx, textMessage(topic, fmt.Sprintf("%s-%d", prefix, i), fmt.Sprintf("%s %d", prefix, i)))
		if err != nil {
			t.Fatalf("send %s-%d: %v", prefix, i, err)
		}
		acks[i] = ack
	}
	return acks
}

func seqRange(from, to int64) []int64 {
	var out []int64
	for s := from; s <= to; s++ {
		out = append(out, s)
	}
	return out
}

func TestShard01MonthEndAndStartLandInTheirTablesWithContinuousSeq(t *testing.T) {
	srv := Start(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := newChat(t, srv, ctx, 1, 2, 1)
	sendN(t, ctx, c.conns[0], c.topic, "before", 5)
	if got := srv.Advance(Month(1)); got != Month(1) {
		t.Fatalf("active month %s after advance", got)
	}
	sendN(t, ctx, c.conns[0], c.topic, "after", 5)
	db := srv.TenantDB()
	if got := srv.SeqsInTable(db, Month(0), c.topic); !slices.Equal(got, seqRange(1, 5)) {
		t.Fatalf("current month holds %v", got)
	}
	if got := srv.SeqsInTable(db, Month(1), c.topic); !slices.Equal(got, seqRange(6, 10)) {
		t.Fatalf("next month holds %v", got)
	}
}

func TestShard02LateWriteKeepsItsFixedMonth(t *testing.T) {
	srv := Start(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := newChat(t, srv, ctx, 2, 2, 1)
	first := sendN(t, ctx, c.conns[0], c.topic, "x", 1)[0]

	// Allocate the next message's seq and month the way a send does, then lose the rest of that
	// send: its routing is fixed in Redis before the month turns, its write happens after.
	rc := srv.Redis()
	alloc := redis.NewSeqAllocator(rc, 0)
	ids, err := snowflake.New(900)
	if err != nil {
		t.Fatal(err)
	}
	msgID, _ := ids.NextID()
	req := textMessage(c.topic, "late", "late")
	hash := message.Draft{ClientMsgID: req.ClientMsgID, Type: req.Type, Content: req.Content}.Hash()
	fixed, err := alloc.Allocate(ctx, srv.Tenant, seq.Request{Topic: c.topic, From: 20_001, ClientMsgID: "late", MsgID: msgID, Hash: hash})
	if err != nil {
		t.Fatal(err)
	}
	if fixed.Seq != first.Seq+1 || fixed.Month.String() != Month(0) {
		t.Fatalf("allocation %+v", fixed)
	}
	srv.Advance(Month(1))
	sendN(t, ctx, c.conns[0], c.topic, "new", 1)

	ack, err := c.conns[0].Send(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if ack.Seq != fixed.Seq || ack.MsgID != msgID {
		t.Fatalf("late write got seq %d msg %d, allocation was %d %d", ack.Seq, ack.MsgID, fixed.Seq, msgID)
	}
	db := srv.TenantDB()
	if got := srv.SeqsInTable(db, Month(0), c.topic); !slices.Equal(got, []int64{1, 2}) {
		t.Fatalf("fixed month must hold the late write: %v", got)
	}
	if got := srv.SeqsInTable(db, Month(1), c.topic); !slices.Equal(got, []int64{3}) {
		t.Fatalf("next month: %v", got)
	}
}

func TestShard03SameClientMsgIDAcrossMonthsKeepsOne(t *testing.T) {
	srv := Start(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := newChat(t, srv, ctx, 3, 2, 1)
	first := sendN(t, ctx, c.conns[0], c.topic, "dup", 1)[0]
	srv.Advance(Month(1))
	// Lose Redis' idempotency record too, so only the MySQL dedup table can recognise the retry.
	rc := srv.Redis()
	keys, err := rc.Do(ctx, rc.B().Keys().Pattern(srv.keyPattern("groupmsg:idem:*")).Build()).AsStrSlice()
	if err != nil || len(keys) == 0 {
		t.Fatalf("idem keys %v %v", keys, err)
	}
	if err := rc.Do(ctx, rc.B().Del().Key(keys...).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	again := sendN(t, ctx, c.conns[0], c.topic, "dup", 1)[0]
	if again.Seq != first.Seq || again.MsgID != first.MsgID {
		t.Fatalf("retry across months: %+v vs %+v", again, first)
	}
	db := srv.TenantDB()
	var live int
	for _, m := range []string{Month(0), Month(1)} {
		var n int
		q := fmt.Sprintf("SELECT COUNT(*) FROM im_group_messages_%s WHERE topic = ? AND client_msg_id = 'dup-0' AND status = 'normal'", m)
		if err := db.QueryRow(q, c.topic).Scan(&n); err != nil {
			t.Fatal(err)
		}
		live += n
	}
	if live != 1 {
		t.Fatalf("%d live rows for one client_msg_id", live)
	}
	// The seq the lost record made the retry allocate is closed, so the next message is not a gap.
	next := sendN(t, ctx, c.conns[0], c.topic, "next", 1)[0]
	msgs, _, err := c.conns[0].SyncMessages(ctx, c.topic, 0, 200)
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range msgs {
		if m.Seq != int64(i+1) {
			t.Fatalf("sync shows a gap at %d: %v", i+1, m.Seq)
		}
	}
	if msgs[len(msgs)-1].Seq != next.Seq {
		t.Fatalf("last synced %d, last sent %d", msgs[len(msgs)-1].Seq, next.Seq)
	}
}

// twoMonthTopic sends 30 messages, turns the month, and sends 30 more.
func twoMonthTopic(t *testing.T, srv *Server, ctx context.Context, groupID int64) chat {
	t.Helper()
	c := newChat(t, srv, ctx, groupID, 2, 2)
	sendN(t, ctx, c.conns[0], c.topic, "m0", 30)
	srv.Advance(Month(1))
	sendN(t, ctx, c.conns[0], c.topic, "m1", 30)
	return c
}

func seqsOf(msgs []wire.Message) []int64 {
	out := make([]int64, len(msgs))
	for i, m := range msgs {
		out[i] = m.Seq
	}
	return out
}

// TestShard04Latest50AcrossTwoMonths is seed 000 §12 item 4: the newest 50 of a topic that spans
// two months come with the right count, order and cursor, and so does the page the cursor asks
// for next. It runs twice on one topic: served from the Redis hot cache, then with the hot
// cache evicted, so the pages come from the month tables and the cursor walks across the month
// boundary in MySQL. The query-source counters prove which path answered: a cache that served
// the second run, or MySQL answering the first, fails the test.
func TestShard04Latest50AcrossTwoMonths(t *testing.T) {
	srv := Start(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := twoMonthTopic(t, srv, ctx, 4) // seqs 1–30 in Month(0), 31–60 in Month(1)
	reader := c.conns[1]
	page := func(before int64, limit int, want []int64) {
		t.Helper()
		msgs, err := reader.History(ctx, c.topic, before, limit)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(seqsOf(msgs), want) {
			t.Fatalf("history before %d limit %d: %v, want %v", before, limit, seqsOf(msgs), want)
		}
	}
	latest50 := func() {
		t.Helper()
		page(0, 50, reversed(seqRange(11, 60)))
		page(11, 50, reversed(seqRange(1, 10))) // the cursor is the last seq of the page before
	}

	before := srv.querySources()
	latest50()
	wantSources(t, before, srv.querySources(), map[string]float64{"redis": 2})

	rc := srv.Redis()
	if err := rc.Do(ctx, rc.B().Del().Key(srv.hotKey(c.topic)).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	before = srv.querySources()
	latest50()
	// The newest page spans both month tables; the page its cursor asks for lies in the older.
	wantSources(t, before, srv.querySources(), map[string]float64{"cross_month": 1, "single_month": 1})

	// Pages of 20 from MySQL: the newest month alone, the page whose cursor crosses the
	// boundary, then the older month alone.
	before = srv.querySources()
	page(0, 20, reversed(seqRange(41, 60)))
	page(41, 20, reversed(seqRange(21, 40)))
	page(21, 20, reversed(seqRange(1, 20)))
	wantSources(t, before, srv.querySources(), map[string]float64{"cross_month": 1, "single_month": 2})
}

func TestShard05SinceAcrossMonthsNoGapNoDuplicate(t *testing.T) {
	srv := Start(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := twoMonthTopic(t, srv, ctx, 5)
	var all []int64
	since := int64(0)
	for range 10 {
		msgs, fin, err := c.conns[1].SyncMessages(ctx, c.topic, since, 7)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, seqsOf(msgs)...)
		since = fin.LastSeq
		if !fin.HasMore {
			break
		}
	}
	if !slices.Equal(all, seqRange(1, 60)) {
		t.Fatalf("since paging across months: %v", all)
	}
	msgs, _, err := c.conns[1].SyncMessages(ctx, c.topic, 28, 5)
	if err != nil || !slices.Equal(seqsOf(msgs), seqRange(29, 33)) {
		t.Fatalf("page straddling the boundary: %v %v", seqsOf(msgs), err)
	}
}

func TestShard06TopicSeqLocatesHistoricalMessage(t *testing.T) {
	srv := Start(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := twoMonthTopic(t, srv, ctx, 6)
	for _, s := range []int64{1, 30, 31, 60} {
		var m wire.Message
		srv.MustAdmin("GET", fmt.Sprintf("/topics/%s/messages/%d", c.topic, s), nil, &m)
		if m.Seq != s {
			t.Fatalf("lookup %d returned %d", s, m.Seq)
		}
	}
	if code := srv.Admin("GET", "/topics/"+c.topic+"/messages/61", nil, nil); code != http.StatusNotFound {
		t.Fatalf("seq beyond the end: HTTP %d", code)
	}
}

func TestShard11MissingMonthTableIsRetriedNeverWrittenElsewhere(t *testing.T) {
	srv := Start(t, Options{Env: map[string]string{"IMD_SHARD_CHECK_INTERVAL": "1s"}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := newChat(t, srv, ctx, 11, 2, 1)
	sendN(t, ctx, c.conns[0], c.topic, "a", 2)
	srv.Advance(Month(1))
	db := srv.TenantDB()
	if _, err := db.Exec("DROP TABLE im_group_messages_" + Month(1)); err != nil {
		t.Fatal(err)
	}
	_, err := c.conns[0].Send(ctx, textMessage(c.topic, "lost-table", "x"))
	if !isCode(err, wire.CodeBusy) {
		t.Fatalf("send into a missing table: %v, want 50301", err)
	}
	if got := srv.SeqsInTable(db, Month(0), c.topic); !slices.Equal(got, []int64{1, 2}) {
		t.Fatalf("nothing may be written to another month: %v", got)
	}
	if !strings.Contains(srv.Metrics(), "group_message_shard_missing_total") {
		t.Fatal("missing table must be counted for the alert")
	}
	// The alert ImdMonthTableMissing fires on an increase: the refused send must move it.
	if n := srv.metricValue("group_message_shard_missing_total"); n < 1 {
		t.Fatalf("group_message_shard_missing_total = %v after a send into a missing table, want at least 1", n)
	}
	if n := srv.metricValue("group_message_persist_total", "month", Month(1), "status", "failed"); n < 1 {
		t.Fatalf("group_message_persist_total{month=%s,status=failed} = %v, want at least 1", Month(1), n)
	}
	// The shard manager recreates the table; the client's retry then lands with its fixed seq.
	var ack wire.SendAck
	deadline := time.Now().Add(20 * time.Second)
	for {
		ack, err = c.conns[0].Send(ctx, textMessage(c.topic, "lost-table", "x"))
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if err != nil || ack.Seq != 3 {
		t.Fatalf("retry after the table came back: %+v %v", ack, err)
	}
	if got := srv.SeqsInTable(db, Month(1), c.topic); !slices.Equal(got, []int64{3}) {
		t.Fatalf("retried write: %v", got)
	}
}

// TestShard13BigGroupConcurrentSendsKeepSeqUnique is seed 000 §12 item 13: a 10,000-member
// group with 50 members sending at once. The acknowledged seqs are exactly 1..N, no hole and no
// duplicate, the month table holds each once, and the topic's route mirror counts them all. The members who only receive are written to t_users in one statement
// (the admin API would take minutes for 10,000); the group is created through the admin API.
// The sends come in two concurrent rounds with a history read between them: the read builds
// the topic's route in Redis from the mirror (seed 000 §3.4 rule 3; a fresh topic has none,
// and committed ranges only extend a route that exists), so the second round's concurrent
// commits must keep the Redis copy equal to the mirror. The copy is read through the
// adapter (ports.RouteCache), never by key name: DESIGN §11 places keys in slot groups.
func TestShard13BigGroupConcurrentSendsKeepSeqUnique(t *testing.T) {
	srv := Start(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const members, senders, each = 10_000, 50, 10
	const groupID, firstID = 13, 130_001
	db := srv.TenantDB()
	ids := make([]int64, members)
	for i := range ids {
		ids[i] = firstID + int64(i)
	}
	started := time.Now()
	insertUsers(t, db, ids[senders:])
	conns := make([]*client.Conn, senders)
	for i := range senders {
		srv.MustAdmin("POST", "/users", map[string]any{"user_id": ids[i]}, nil)
	}
	topic := srv.Group(groupID, ids[0], ids[1:]...)
	for i := range senders {
		conns[i] = srv.Connect(ctx, srv.Token(ids[i]), 1)
	}
	if n := countRows(t, db, "SELECT COUNT(*) FROM t_conversation_members m JOIN t_conversations c ON c.id = m.conversation_id WHERE c.topic = ?", topic); n != members {
		t.Fatalf("the group has %d members, want %d", n, members)
	}

	t.Logf("10,000 members and 50 connections ready in %v", time.Since(started).Round(time.Millisecond))
	started = time.Now()

	seqs := sendAll(t, ctx, conns, topic, 0, each/2, nil)
	// The first page of history builds the Redis route from the mirror of the first round.
	if page, err := conns[0].History(ctx, topic, 0, 1); err != nil || len(page) != 1 || page[0].Seq != senders*each/2 {
		t.Fatalf("history after the first round: %+v %v", page, err)
	}
	routes := redis.NewRouteCache(srv.Redis())
	if rt, found, err := routes.Segments(ctx, srv.Tenant, topic); err != nil || !found || len(rt) != 1 || rt[0].MaxSeq != senders*each/2 {
		t.Fatalf("redis route after the first round: %+v found=%v %v", rt, found, err)
	}
	seqs = append(seqs, sendAll(t, ctx, conns, topic, each/2, each, nil)...)
	t.Logf("%d sends acknowledged in %v", senders*each, time.Since(started).Round(time.Millisecond))
	const n = senders * each
	slices.Sort(seqs)
	if !slices.Equal(seqs, seqRange(1, n)) {
		t.Fatalf("acknowledged seqs not exactly 1..%d: %d values, %v…", n, len(seqs), seqs[:min(len(seqs), 20)])
	}
	if got := srv.SeqsInTable(db, Month(0), topic); !slices.Equal(got, seqRange(1, n)) {
		t.Fatalf("the month table holds %d seqs, want 1..%d once each", len(got), n)
	}
	want := Segment{Month: Month(0), MinSeq: 1, MaxSeq: n, Count: n}
	if mirror := srv.Mirror(db, topic); len(mirror) != 1 || mirror[0] != want {
		t.Fatalf("mirror %+v, want %+v", mirror, want)
	}
	// The Redis copy is extended after each commit (seed 000 §3.4 rule 2), so it is awaited.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		rt, found, err := routes.Segments(ctx, srv.Tenant, topic)
		if err != nil || !found {
			t.Fatalf("redis route: found=%v %v", found, err)
		}
		got := make([]Segment, len(rt))
		for i, s := range rt {
			got[i] = Segment{Month: s.Month.String(), MinSeq: s.MinSeq, MaxSeq: s.MaxSeq, Count: s.Count}
		}
		if len(got) == 1 && got[0] == want {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("redis route %+v, want %+v like the mirror", got, want)
		}
	}
}

// sendAll has every connection send its messages from..to-1 to topic at once, each closed
// loop, and returns the acknowledged seqs; before, if set, runs before each send. A failed
// send fails the test.
func sendAll(t *testing.T, ctx context.Context, conns []*client.Conn, topic string, from, to int, before func(i, j int)) []int64 {
	t.Helper()
	var mu sync.Mutex
	var seqs []int64
	var wg sync.WaitGroup
	for i, conn := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := from; j < to; j++ {
				if before != nil {
					before(i, j)
				}
				ack, err := conn.Send(ctx, textMessage(topic, fmt.Sprintf("s%d-%d", i, j), "load"))
				if err != nil {
					t.Errorf("sender %d: %v", i, err)
					return
				}
				mu.Lock()
				seqs = append(seqs, ack.Seq)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	return seqs
}

// insertUsers creates users straight in the tenant's t_users, in batches of one statement.
func insertUsers(t testing.TB, db *sql.DB, ids []int64) {
	t.Helper()
	for start := 0; start < len(ids); start += 1000 {
		batch := ids[start:min(start+1000, len(ids))]
		args := make([]any, len(batch))
		for i, id := range batch {
			args[i] = id
		}
		rows := strings.Repeat("(?, NOW(3), NOW(3)),", len(batch))
		if _, err := db.Exec("INSERT INTO t_users (user_id, created_at, updated_at) VALUES "+strings.TrimSuffix(rows, ","), args...); err != nil {
			t.Fatalf("insert users: %v", err)
		}
	}
}

func TestShard14IllegalMonthsAndTableNamesAreRejected(t *testing.T) {
	srv := Start(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, m := range []string{"202613", "202600", "20261", "2026111", "abcdef", "2026-1", "", "199912", Month(-1), Month(24)} {
		if code := srv.Admin("POST", "/shards/advance", map[string]string{"month": m}, nil); code != http.StatusBadRequest {
			t.Errorf("advance to %q: HTTP %d, want 400", m, code)
		}
	}
	for _, topic := range []string{"im_group_messages_" + Month(0), "grp_1%3BDROP%20TABLE%20x", "grp_01", "p2p_2_1"} {
		if code := srv.Admin("GET", "/topics/"+topic+"/messages?limit=5", nil, nil); code != http.StatusBadRequest {
			t.Errorf("topic %q: HTTP %d, want 400", topic, code)
		}
	}
	c := srv.Connect(ctx, srv.User(1), 1)
	if _, _, err := c.SyncMessages(ctx, "im_group_messages_"+Month(0), 0, 10); !isCode(err, wire.CodeInvalidArgument) {
		t.Errorf("sync of a table name: %v", err)
	}
}

func TestShard15ConcurrentNodesAcrossMonthSwitchShareOneActiveMonth(t *testing.T) {
	first := Start(t, Options{})
	second := Start(t, Options{Tenant: first.Tenant, Env: map[string]string{"IMD_NODE_ID": "2"}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const perNode, each = 6, 30
	ids := make([]int64, 2*perNode)
	tokens := make([]string, len(ids))
	for i := range ids {
		ids[i] = int64(i + 1)
		tokens[i] = first.User(ids[i])
	}
	topic := first.Group(15, ids[0], ids[1:]...)
	var conns []*client.Conn
	for i := range ids {
		node := first
		if i >= perNode {
			node = second
		}
		conns = append(conns, node.Connect(ctx, tokens[i], 1))
	}

	seqs := sendAll(t, ctx, conns, topic, 0, each, func(i, j int) {
		if i == 0 && j == each/2 {
			first.Advance(Month(1))
		}
	})
	slices.Sort(seqs)
	if !slices.Equal(seqs, seqRange(1, int64(len(conns)*each))) {
		t.Fatalf("seqs reused or skipped across nodes: %d values", len(seqs))
	}
	if got := first.ActiveMonth(first.Redis()); got != Month(1) {
		t.Fatalf("active month %s", got)
	}
	mirror := first.Mirror(first.TenantDB(), topic)
	for i := 1; i < len(mirror); i++ {
		if mirror[i].MinSeq <= mirror[i-1].MaxSeq {
			t.Fatalf("month segments overlap: %+v", mirror)
		}
	}
	var total int64
	for _, g := range mirror {
		total += g.Count
	}
	if total != int64(len(seqs)) {
		t.Fatalf("mirror counts %d rows, %d acked", total, len(seqs))
	}
}

func TestShard16DeletedRouteIsRebuiltFromMirror(t *testing.T) {
	srv := Start(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := twoMonthTopic(t, srv, ctx, 16)
	before, err := c.conns[1].History(ctx, c.topic, 0, 50)
	if err != nil {
		t.Fatal(err)
	}
	rc := srv.Redis()
	routeKey, metaKey := srv.topicKeys(c.topic).Route(c.topic), srv.topicKeys(c.topic).RouteMeta(c.topic)
	if err := rc.Do(ctx, rc.B().Del().Key(routeKey, metaKey).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	after, err := c.conns[1].History(ctx, c.topic, 0, 50)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(seqsOf(before), seqsOf(after)) {
		t.Fatalf("results changed after losing the route: %v vs %v", seqsOf(before), seqsOf(after))
	}
	n, err := rc.Do(ctx, rc.B().Zcard().Key(routeKey).Build()).AsInt64()
	if err != nil || n != 2 {
		t.Fatalf("route rebuilt with %d months (%v)", n, err)
	}
	all, _, err := c.conns[1].SyncMessages(ctx, c.topic, 0, 200)
	if err != nil || !slices.Equal(seqsOf(all), seqRange(1, 60)) {
		t.Fatalf("sync after rebuild: %v %v", seqsOf(all), err)
	}
}

// Metrics scrapes /metrics.
func (s *Server) Metrics() string {
	s.t.Helper()
	resp, err := http.Get("http://" + s.HTTPAddr + "/metrics")
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// READ_MESSAGE by msg_id (seed 003 §14's form) finds a message in the month it was written to
// after an operator moved the tenant's month ahead early, not only in its id's calendar month.
func TestShardReadByMsgIDAfterAnEarlyMonthSwitch(t *testing.T) {
	srv := Start(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := newChat(t, srv, ctx, 17, 2, 2)
	before := sendN(t, ctx, c.conns[0], c.topic, "before", 1)[0]
	for _, ahead := range []int{1, 2} {
		if got := srv.Advance(Month(ahead)); got != Month(ahead) {
			t.Fatalf("active month %s after advance to %s", got, Month(ahead))
		}
		ack := sendN(t, ctx, c.conns[0], c.topic, fmt.Sprint("ahead-", ahead), 1)[0]
		if got := srv.SeqsInTable(srv.TenantDB(), Month(ahead), c.topic); !slices.Contains(got, ack.Seq) {
			t.Fatalf("seq %d not in %s: %v", ack.Seq, Month(ahead), got)
		}
		for _, form := range []struct {
			name string
			req  wire.ReadRequest
		}{
			{"msg_id", wire.ReadRequest{ConversationID: ack.ConversationID, MsgID: ack.MsgID}},
			{"last_msg_id", wire.ReadRequest{ConversationID: ack.ConversationID, LastMsgID: ack.MsgID, PeerID: 170_001}},
		} {
			w, err := readMessage(ctx, c.conns[1], form.req)
			if err != nil || w.Seq != ack.Seq || w.MsgID != ack.MsgID {
				t.Fatalf("%d month(s) ahead, READ by %s = %+v, %v; want seq %d", ahead, form.name, w, err, ack.Seq)
			}
		}
	}
	// The topic+seq lookups (admin, favorites, reports) find it too, also once Redis lost the
	// routes and the hot cache and only MySQL knows where the seq lives.
	last := srv.SeqsInTable(srv.TenantDB(), Month(2), c.topic)
	rc := srv.Redis()
	srv.deleteRoutes(rc, true)
	if err := rc.Do(ctx, rc.B().Del().Key(srv.hotKey(c.topic)).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	var got wire.Message
	srv.MustAdmin("GET", fmt.Sprintf("/topics/%s/messages/%d", c.topic, last[0]), nil, &got)
	if got.Seq != last[0] {
		t.Fatalf("admin lookup of seq %d answered %+v", last[0], got)
	}
	member := srv.Token(170_002)
	for path, body := range map[string]map[string]any{
		"/api/v1/favorites": {"topic": c.topic, "seq": last[0]},
		"/api/v1/reports":   {"topic": c.topic, "seq": last[0], "reason": "spam"},
	} {
		if code, e := call(t, srv, member, "POST", path, body, nil); code != http.StatusOK {
			t.Fatalf("%s of seq %d in %s: HTTP %d %+v", path, last[0], Month(2), code, e)
		}
	}
	// The message of the calendar month is still found, and the watermark does not move back.
	w, err := readMessage(ctx, c.conns[1], wire.ReadRequest{ConversationID: before.ConversationID, MsgID: before.MsgID})
	if err != nil || w.Seq != before.Seq+2 {
		t.Fatalf("READ of the first message = %+v, %v; want the stored watermark seq %d", w, err, before.Seq+2)
	}
	_, err = readMessage(ctx, c.conns[1], wire.ReadRequest{ConversationID: before.ConversationID, MsgID: before.MsgID + 1_000_000})
	assertCode(t, err, wire.CodeNotFound)
}
