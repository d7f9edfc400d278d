package mysql

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/seq"
	"github.com/imdhq/imd/core/domain/shard"
	"github.com/imdhq/imd/core/domain/social"
	"github.com/imdhq/imd/ports"
)

const testMonth = month.Month(203001)

// newTestStore provisions a tenant with testMonth writable.
func newTestStore(t *testing.T, opts MessageStoreOptions) (*MessageStore, *Cluster, string) {
	t.Helper()
	c, tenant := newTestCluster(t)
	s := NewMessageStore(c, opts)
	t.Cleanup(func() { s.Close() })
	shards := NewShardStore(c)
	ctx := context.Background()
	if err := shards.EnsureTable(ctx, tenant, testMonth); err != nil {
		t.Fatal(err)
	}
	if err := shards.SetState(ctx, tenant, testMonth, shard.Prepared, shard.Writable); err != nil {
		t.Fatal(err)
	}
	return s, c, tenant
}

func testMessage(topicName string, sq, msgID int64) message.Message {
	return message.Message{
		Topic: topicName, GroupID: 1, Seq: sq, MsgID: msgID, From: 7,
		ClientMsgID: fmt.Sprintf("c-%d", msgID), Type: "text",
		Content: json.RawMessage(fmt.Sprintf(`{"text":"m%d"}`, msgID)), Status: message.StatusNormal,
		Version: 1, CreatedAt: testMonth.Start().Add(time.Duration(sq) * time.Second), Month: testMonth,
	}
}

// commitBatch runs one batch through the tenant's writer directly, so the test decides which
// requests share a transaction.
func commitBatch(t *testing.T, s *MessageStore, c *Cluster, tenant string, msgs ...message.Message) []appendResp {
	t.Helper()
	td, err := c.tenant(tenant)
	if err != nil {
		t.Fatal(err)
	}
	w := &writer{opts: s.opts, stats: &s.stats, t: td, marks: s.marker(tenant, td), month: testMonth}
	batch := make([]*appendReq, len(msgs))
	for i, m := range msgs {
		batch[i] = &appendReq{ctx: context.Background(), msg: m, hash: "h-" + m.ClientMsgID, done: make(chan appendResp, 1)}
	}
	w.commit(batch)
	out := make([]appendResp, len(batch))
	for i, r := range batch {
		out[i] = <-r.done
	}
	return out
}

func TestBatchWithTakenSeqSparesInnocentRequests(t *testing.T) {
	s, c, tenant := newTestStore(t, MessageStoreOptions{})
	commitBatch(t, s, c, tenant, testMessage("grp_1", 1, 101))

	got := commitBatch(t, s, c, tenant,
		testMessage("grp_1", 2, 102),
		testMessage("grp_1", 1, 103), // seq 1 is taken
		testMessage("grp_2", 1, 104),
	)
	for i, want := range []error{nil, seq.ErrTaken, nil} {
		if !errors.Is(got[i].err, want) {
			t.Errorf("request %d: err = %v, want %v", i, got[i].err, want)
		}
		if want == nil && got[i].res.Outcome != ports.Stored {
			t.Errorf("request %d: outcome %d, want Stored", i, got[i].res.Outcome)
		}
	}
	for _, tp := range []string{"grp_1", "grp_2"} {
		r, err := s.Segments(context.Background(), tenant, tp)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]int64{"grp_1": 2, "grp_2": 1}[tp]
		if len(r) != 1 || r[0].Count != want {
			t.Errorf("%s route = %+v, want one segment of %d", tp, r, want)
		}
	}
}

func TestBatchMixesOutcomesInOneTransaction(t *testing.T) {
	s, c, tenant := newTestStore(t, MessageStoreOptions{})
	ctx := context.Background()
	dir := NewDirectory(c)
	conv, err := dir.CreateGroup(ctx, tenant, social.Group{ID: 1, Owner: 7}, 500, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	first := testMessage("grp_1", 1, 101)
	first.ConversationID = conv.ID
	commitBatch(t, s, c, tenant, first)

	reused := testMessage("grp_1", 3, 103)
	reused.ClientMsgID = first.ClientMsgID
	fresh := testMessage("grp_1", 2, 102)
	fresh.ConversationID = conv.ID
	before := s.Stats()
	got := commitBatch(t, s, c, tenant, first, reused, fresh)
	after := s.Stats()

	wantOutcomes := []ports.AppendOutcome{ports.AlreadyStored, ports.DuplicateClientMsgID, ports.Stored}
	for i, want := range wantOutcomes {
		if got[i].err != nil || got[i].res.Outcome != want {
			t.Fatalf("request %d: %d, %v; want outcome %d", i, got[i].res.Outcome, got[i].err, want)
		}
	}
	if got[1].res.Existing.MsgID != first.MsgID || got[1].res.Hash != "h-"+first.ClientMsgID {
		t.Fatalf("duplicate answered %+v, want the first message and its hash", got[1].res)
	}
	if n := after.Transactions - before.Transactions; n != 1 {
		t.Fatalf("batch took %d transactions, want 1", n)
	}
	r, err := s.Segments(ctx, tenant, "grp_1")
	if err != nil || len(r) != 1 || r[0].MinSeq != 1 || r[0].MaxSeq != 3 || r[0].Count != 3 {
		t.Fatalf("route = %+v, %v; want seqs 1-3, 3 rows (message, message, tombstone)", r, err)
	}
	wantLastMessage(t, c, tenant, conv.ID, 2, fresh.MsgID)
}

func wantLastMessage(t *testing.T, c *Cluster, tenant string, conversationID, lastSeq, lastMsgID int64) {
	t.Helper()
	var gotSeq, gotID int64
	err := rawDB(t, c, tenant).QueryRow(
		"SELECT last_seq, last_msg_id FROM t_conversations WHERE id = ?", conversationID).Scan(&gotSeq, &gotID)
	if err != nil {
		t.Fatal(err)
	}
	if gotSeq != lastSeq || gotID != lastMsgID {
		t.Fatalf("conversation last = seq %d msg %d, want seq %d msg %d", gotSeq, gotID, lastSeq, lastMsgID)
	}
}

func TestConversationMovesOnlyForward(t *testing.T) {
	s, c, tenant := newTestStore(t, MessageStoreOptions{})
	ctx := context.Background()
	if _, err := NewDirectory(c).CreateGroup(ctx, tenant, social.Group{ID: 1, Owner: 7}, 500, nil, 0); err != nil {
		t.Fatal(err)
	}
	newer, older := testMessage("grp_1", 5, 105), testMessage("grp_1", 4, 104)
	newer.ConversationID, older.ConversationID = 500, 500
	commitBatch(t, s, c, tenant, newer)
	commitBatch(t, s, c, tenant, older) // a late write of an earlier seq
	wantLastMessage(t, c, tenant, 500, 5, newer.MsgID)
}

func TestPageHidesTheViewersDeletedRanges(t *testing.T) {
	s, c, tenant := newTestStore(t, MessageStoreOptions{})
	ctx := context.Background()
	var msgs []message.Message
	for i := int64(1); i <= 8; i++ {
		msgs = append(msgs, testMessage("grp_1", i, 100+i))
	}
	commitBatch(t, s, c, tenant, msgs...)
	// User 7 deleted seqs [3, 5) and [7, 8) for themself; user 9 deleted another topic.
	_, err := rawDB(t, c, tenant).Exec(`INSERT INTO im_dellog (topic, deletedfor, low, hi)
		VALUES ('grp_1', 7, 3, 5), ('grp_1', 7, 7, 8), ('grp_2', 9, 1, 100)`)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		q    message.PageQuery
		want string
	}{
		{"viewer with ranges", message.PageQuery{Viewer: 7, Limit: 10}, "[1 2 5 6 8]"},
		{"descending", message.PageQuery{Viewer: 7, Limit: 3, Desc: true}, "[8 6 5]"},
		{"other viewer", message.PageQuery{Viewer: 9, Limit: 10}, "[1 2 3 4 5 6 7 8]"},
		{"no viewer", message.PageQuery{Limit: 10}, "[1 2 3 4 5 6 7 8]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.q.Topic = "grp_1"
			got, err := s.Page(ctx, tenant, testMonth, tc.q)
			if err != nil {
				t.Fatal(err)
			}
			seqs := make([]int64, len(got))
			for i, m := range got {
				seqs[i] = m.Seq
			}
			if fmt.Sprint(seqs) != tc.want {
				t.Fatalf("seqs = %v, want %s", seqs, tc.want)
			}
		})
	}
}

func TestCollectDefersConflictingRequests(t *testing.T) {
	w := &writer{opts: MessageStoreOptions{MaxBatch: 3, MaxBatchBytes: 1 << 20}, reqs: make(chan *appendReq, 10)}
	req := func(sq, msgID int64, clientMsgID string) *appendReq {
		m := testMessage("grp_1", sq, msgID)
		m.ClientMsgID = clientMsgID
		return &appendReq{ctx: context.Background(), msg: m, done: make(chan appendResp, 1)}
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	gone := req(9, 109, "gone")
	gone.ctx = cancelled
	pending := []*appendReq{req(1, 101, "a")}
	for _, r := range []*appendReq{
		req(1, 101, "a"), // a retry of the same message: next batch
		req(1, 102, "b"), // the same seq: next batch
		req(2, 101, "c"), // the same msg_id: next batch
		gone,             // its caller left: answered, not written
		req(2, 102, "d"),
		req(3, 103, "e"),
		req(4, 104, "f"), // the batch is full
	} {
		w.reqs <- r
	}
	batch, rest, open := w.collect(pending, true)
	if !open {
		t.Fatal("queue reported closed")
	}
	ids := func(rs []*appendReq) string {
		var s []string
		for _, r := range rs {
			s = append(s, r.msg.ClientMsgID)
		}
		return fmt.Sprint(s)
	}
	if got := ids(batch); got != "[a d e]" {
		t.Fatalf("batch = %s, want [a d e]", got)
	}
	if got := ids(rest); got != "[a b c]" {
		t.Fatalf("left for the next batch = %s, want [a b c]", got)
	}
	if r := <-gone.done; !errors.Is(r.err, context.Canceled) {
		t.Fatalf("cancelled request answered %v, want context.Canceled", r.err)
	}
	if len(w.reqs) != 1 {
		t.Fatalf("%d requests left queued, want 1", len(w.reqs))
	}
}

func TestCloseDrainsQueuedAppends(t *testing.T) {
	s, _, tenant := newTestStore(t, MessageStoreOptions{})
	ctx := context.Background()
	const n = 300
	var wg sync.WaitGroup
	var mu sync.Mutex
	var stored []int64
	for i := range n {
		wg.Go(func() {
			res, err := s.Append(ctx, tenant, testMessage("grp_1", int64(i+1), int64(1000+i)), "h")
			switch {
			case err == nil && res.Outcome == ports.Stored:
				mu.Lock()
				stored = append(stored, int64(i+1))
				mu.Unlock()
			case !errors.Is(err, ErrClosed):
				t.Errorf("Append: %v, %v", res, err)
			}
		})
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if _, err := s.Append(ctx, tenant, testMessage("grp_1", n+1, 5000), "h"); !errors.Is(err, ErrClosed) {
		t.Fatalf("Append after Close: err = %v, want ErrClosed", err)
	}
	for _, sq := range stored {
		if _, err := s.Get(ctx, tenant, testMonth, "grp_1", sq); err != nil {
			t.Fatalf("acknowledged seq %d is not readable: %v", sq, err)
		}
	}
	t.Logf("%d of %d appends committed before Close", len(stored), n)
}

func TestGroupCommitBatchesConcurrentAppends(t *testing.T) {
	s, _, tenant := newTestStore(t, MessageStoreOptions{})
	ctx := context.Background()
	const n = 400
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			m := testMessage(fmt.Sprintf("grp_%d", i%40+1), int64(i/40+1), int64(1000+i))
			if _, err := s.Append(ctx, tenant, m, "h"); err != nil {
				t.Errorf("Append: %v", err)
			}
		})
	}
	wg.Wait()
	st := s.Stats()
	if st.Appends != n || st.Transactions >= n/2 {
		t.Fatalf("stats = %+v: want %d appends in far fewer transactions", st, n)
	}
	t.Logf("%d appends in %d transactions", st.Appends, st.Transactions)
}

func TestProvisionIsIdempotent(t *testing.T) {
	c, tenant := newTestCluster(t)
	ctx := context.Background()
	td, _ := c.tenant(tenant)
	if err := c.Provision(ctx, tenant, td.name, ""); err != nil {
		t.Fatalf("Provision again: %v", err)
	}
	if err := c.Provision(ctx, tenant, "imd_other", ""); err == nil {
		t.Fatal("Provision with another database succeeded")
	}
	// A second node starting on the same database finds the schema current.
	other, err := Open(testDSN(t), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := other.Provision(ctx, tenant, td.name, ""); err != nil {
		t.Fatalf("Provision from a second cluster: %v", err)
	}
	for _, bad := range []struct{ tenant, database string }{
		{"Bad", "imd_x"}, {"ok", "x; DROP DATABASE mysql"}, {"ok", "1abc"},
	} {
		if err := c.Provision(ctx, bad.tenant, bad.database, ""); err == nil {
			t.Errorf("Provision(%q, %q) succeeded", bad.tenant, bad.database)
		}
	}
}

// A month table dropped while the catalog still lists it is a missing month for the send path
// (shard.ErrMonthMissing: 50301, counted for the alert), not an anonymous storage error.
func TestAppendIntoADroppedMonthTableIsMonthMissing(t *testing.T) {
	s, c, tenant := newTestStore(t, MessageStoreOptions{})
	td, err := c.tenant(tenant)
	if err != nil {
		t.Fatal(err)
	}
	table, _ := testMonth.Table()
	if _, err := td.db.Exec("DROP TABLE " + table); err != nil {
		t.Fatal(err)
	}
	m := testMessage("grp_1", 1, 1001)
	if _, err := s.Append(context.Background(), tenant, m, "h"); !errors.Is(err, shard.ErrMonthMissing) {
		t.Fatalf("Append into a dropped table: %v, want shard.ErrMonthMissing", err)
	}
}
