package e2e

// Recall, edit and delete (issue 5 item 5; seed 000 §7 and §12 items 8–9) through the real
// binary, MariaDB and Redis.

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/imdhq/imd/clients/go/client"
	"github.com/imdhq/imd/clients/go/wire"
)

// change sends RECALL_MESSAGE, EDIT_MESSAGE or DELETE_MESSAGES and decodes the data into out
// (if not nil); a code ≠ 0 is a *client.CodeError.
func change(ctx context.Context, c *client.Conn, cmd uint16, body, out any) error {
	env, err := c.Request(ctx, cmd, body)
	if err != nil {
		return err
	}
	if env.Code != wire.CodeOK {
		return &client.CodeError{Code: env.Code, Msg: env.Msg}
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(env.Data, out)
}

func recall(ctx context.Context, c *client.Conn, topic string, seq int64) (wire.Message, error) {
	var m wire.Message
	err := change(ctx, c, wire.CmdRecallMessage, wire.RecallRequest{Topic: topic, Seq: seq}, &m)
	return m, err
}

func edit(ctx context.Context, c *client.Conn, topic string, seq int64, text string, version int64) (wire.Message, error) {
	content, _ := json.Marshal(map[string]string{"text": text})
	var m wire.Message
	err := change(ctx, c, wire.CmdEditMessage, wire.EditRequest{Topic: topic, Seq: seq, Content: content, Version: version}, &m)
	return m, err
}

func deleteRange(ctx context.Context, c *client.Conn, topic string, low, hi int64) error {
	var data map[string]any
	if err := change(ctx, c, wire.CmdDeleteMessages, wire.DeleteRequest{Topic: topic, Low: low, Hi: hi}, &data); err != nil {
		return err
	}
	if len(data) != 0 {
		return fmt.Errorf("DELETE_MESSAGES data = %v, want {}", data)
	}
	return nil
}

// topicEvent is the content of a topic event message: a recall, edit or delete, or a reaction
// or pin (issue 31) with its emoji, action and count.
type topicEvent struct {
	Event   string `json:"event"`
	Seq     int64  `json:"seq"`
	Version int64  `json:"version"`
	Emoji   string `json:"emoji"`
	Action  string `json:"action"`
	Count   int    `json:"count"`
}

// awaitEvent waits for the MESSAGE push of a topic event and returns the message and its event.
func awaitEvent(t *testing.T, c *client.Conn, limit time.Duration) (wire.Message, topicEvent) {
	t.Helper()
	deadline := time.After(limit)
	for {
		select {
		case p := <-c.Pushes():
			if p.Command != wire.CmdMessage || p.Message == nil || p.Message.Type != wire.TypeSystem {
				continue
			}
			var e topicEvent
			if err := json.Unmarshal(p.Message.Content, &e); err != nil {
				t.Fatalf("event content %s: %v", p.Message.Content, err)
			}
			return *p.Message, e
		case <-deadline:
			t.Fatal("no topic event pushed")
		}
	}
}

func syncAll(t *testing.T, ctx context.Context, c *client.Conn, topic string) []wire.Message {
	t.Helper()
	msgs, fin, err := c.SyncMessages(ctx, topic, 0, 200)
	if err != nil || fin.HasMore {
		t.Fatalf("sync %s: %v, finish %+v", topic, err, fin)
	}
	return msgs
}

func textOf(t *testing.T, m wire.Message) string {
	t.Helper()
	var c struct {
		Text string `json:"text"`
	}
	if err := json.Unmarshal(m.Content, &c); err != nil {
		t.Fatalf("content of seq %d: %v", m.Seq, err)
	}
	return c.Text
}

func countRows(t *testing.T, db *sql.DB, query string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := db.QueryRow(query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

func TestRecallIsPushedAndSyncedAsOneTopicEvent(t *testing.T) {
	srv := Start(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tokA, tokB := srv.User(3001), srv.User(3002)
	topic := srv.Group(31, 3001, 3002)
	a, aOther, b := srv.Connect(ctx, tokA, 1), srv.Connect(ctx, tokA, 2), srv.Connect(ctx, tokB, 1)

	ack, err := a.Send(ctx, textMessage(topic, "oops-1", "wrong chat"))
	if err != nil {
		t.Fatal(err)
	}
	collectMessages(t, b, 1, 10*time.Second)
	collectMessages(t, aOther, 1, 10*time.Second)

	t.Run("only the sender may recall", func(t *testing.T) {
		_, err := recall(ctx, b, topic, ack.Seq)
		assertCode(t, err, wire.CodeForbidden)
	})
	t.Run("the recall answers the updated message", func(t *testing.T) {
		m, err := recall(ctx, a, topic, ack.Seq)
		if err != nil {
			t.Fatal(err)
		}
		if m.Status != wire.StatusRecalled || m.Version != 2 || string(m.Content) != "{}" || m.MsgID != ack.MsgID {
			t.Fatalf("recalled message = %+v", m)
		}
	})
	t.Run("the other member and the sender's other device get the event pushed", func(t *testing.T) {
		for _, c := range []*client.Conn{b, aOther} {
			m, e := awaitEvent(t, c, 10*time.Second)
			if e != (topicEvent{Event: "recall", Seq: ack.Seq, Version: 2}) || m.From != 3001 || m.Seq != ack.Seq+1 || m.Topic != topic {
				t.Fatalf("event %+v in message %+v", e, m)
			}
		}
		assertNoMessage(t, a, 300*time.Millisecond) // the recalling device has its response
	})
	t.Run("a retry answers the same and writes no second event", func(t *testing.T) {
		m, err := recall(ctx, a, topic, ack.Seq)
		if err != nil || m.Version != 2 || m.Status != wire.StatusRecalled {
			t.Fatalf("retry: %+v, %v", m, err)
		}
		assertNoMessage(t, b, 500*time.Millisecond)
	})
	t.Run("SYNC_MESSAGES shows the recalled message and the event", func(t *testing.T) {
		msgs := syncAll(t, ctx, b, topic)
		if len(msgs) != 2 {
			t.Fatalf("sync returned %d messages: %+v", len(msgs), msgs)
		}
		if m := msgs[0]; m.Status != wire.StatusRecalled || m.Version != 2 || string(m.Content) != "{}" {
			t.Fatalf("recalled message in sync = %+v", m)
		}
		if m := msgs[1]; m.Type != wire.TypeSystem || m.ClientMsgID != fmt.Sprintf("recall:%d:2", ack.Seq) {
			t.Fatalf("event in sync = %+v", m)
		}
	})
	t.Run("one revision row with the month", func(t *testing.T) {
		db := srv.TenantDB()
		var month, action string
		var editor int64
		err := db.QueryRow("SELECT shard_month, action, editor FROM im_message_revisions WHERE topic = ? AND seqid = ?", topic, ack.Seq).
			Scan(&month, &action, &editor)
		if err != nil || month != Month(0) || action != "recall" || editor != 3001 {
			t.Fatalf("revision: %s %s %d, %v", month, action, editor, err)
		}
		if n := countRows(t, db, "SELECT COUNT(*) FROM im_message_revisions"); n != 1 {
			t.Fatalf("%d revision rows", n)
		}
	})
}

func TestEditNeedsTheCurrentVersion(t *testing.T) {
	srv := Start(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tokA, tokB := srv.User(3101), srv.User(3102)
	topic := srv.Group(32, 3101, 3102)
	a, b := srv.Connect(ctx, tokA, 1), srv.Connect(ctx, tokB, 1)
	ack, err := a.Send(ctx, textMessage(topic, "typo-1", "helo"))
	if err != nil {
		t.Fatal(err)
	}
	collectMessages(t, b, 1, 10*time.Second)

	tests := []struct {
		name    string
		conn    *client.Conn
		text    string
		version int64
		code    int
		want    int64 // the version afterwards
	}{
		{"another member", b, "hijack", 1, wire.CodeForbidden, 1},
		{"a version from the future", a, "hello", 2, wire.CodeConflict, 1},
		{"the current version", a, "hello", 1, wire.CodeOK, 2},
		{"the now stale version", a, "hello!", 1, wire.CodeConflict, 2},
		{"the new current version", a, "hello!", 2, wire.CodeOK, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := edit(ctx, tt.conn, topic, ack.Seq, tt.text, tt.version)
			if tt.code != wire.CodeOK {
				assertCode(t, err, tt.code)
			} else if err != nil || m.Version != tt.want || m.EditedAt == nil || textOf(t, m) != tt.text || m.Status != wire.StatusNormal {
				t.Fatalf("edit: %+v, %v", m, err)
			}
			stored := syncAll(t, ctx, b, topic)[0]
			if stored.Version != tt.want {
				t.Fatalf("stored version %d, want %d", stored.Version, tt.want)
			}
		})
	}
	t.Run("each edit is one event to the other member", func(t *testing.T) {
		for _, version := range []int64{2, 3} {
			_, e := awaitEvent(t, b, 10*time.Second)
			if e != (topicEvent{Event: "edit", Seq: ack.Seq, Version: version}) {
				t.Fatalf("event %+v, want edit to version %d", e, version)
			}
		}
		msgs := syncAll(t, ctx, b, topic)
		if len(msgs) != 3 || textOf(t, msgs[0]) != "hello!" {
			t.Fatalf("sync after edits: %+v", msgs)
		}
	})
	t.Run("a recalled message cannot be edited", func(t *testing.T) {
		if _, err := recall(ctx, a, topic, ack.Seq); err != nil {
			t.Fatal(err)
		}
		_, err := edit(ctx, a, topic, ack.Seq, "too late", 4)
		assertCode(t, err, wire.CodeConflict)
	})
}

// TestShard08RecallAndEditLocateOldMonth is seed 000 §12 item 8: a message of the previous
// month is found through the route, changed in its own table, and its revision keeps that
// month, while the events land in the current month.
func TestShard08RecallAndEditLocateOldMonth(t *testing.T) {
	srv := Start(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := newChat(t, srv, ctx, 8, 2, 2)
	old := sendN(t, ctx, c.conns[0], c.topic, "old", 2)
	srv.Advance(Month(1))
	sendN(t, ctx, c.conns[0], c.topic, "new", 1)

	edited, err := edit(ctx, c.conns[0], c.topic, old[0].Seq, "edited", 1)
	if err != nil || edited.Version != 2 || textOf(t, edited) != "edited" {
		t.Fatalf("edit of the old month: %+v, %v", edited, err)
	}
	recalled, err := recall(ctx, c.conns[0], c.topic, old[1].Seq)
	if err != nil || recalled.Status != wire.StatusRecalled {
		t.Fatalf("recall of the old month: %+v, %v", recalled, err)
	}

	db := srv.TenantDB()
	rows, err := db.Query(fmt.Sprintf("SELECT seqid, status, version FROM im_group_messages_%s WHERE topic = ? ORDER BY seqid", Month(0)), c.topic)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var seq, version int64
		var status string
		if err := rows.Scan(&seq, &status, &version); err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%d:%s:%d", seq, status, version))
	}
	if fmt.Sprint(got) != "[1:normal:2 2:recalled:2]" {
		t.Fatalf("old month holds %v", got)
	}
	if n := countRows(t, db, "SELECT COUNT(*) FROM im_message_revisions WHERE topic = ? AND shard_month = ?", c.topic, Month(0)); n != 2 {
		t.Fatalf("%d revisions with month %s, want 2", n, Month(0))
	}
	if got := srv.SeqsInTable(db, Month(1), c.topic); !slices.Equal(got, []int64{3, 4, 5}) {
		t.Fatalf("current month holds %v, want the new message and both events", got)
	}
	msgs := syncAll(t, ctx, c.conns[1], c.topic)
	if len(msgs) != 5 || textOf(t, msgs[0]) != "edited" || msgs[1].Status != wire.StatusRecalled {
		t.Fatalf("sync across both months: %+v", msgs)
	}
}

// TestShard09UserDeleteRangeAcrossMonths is seed 000 §12 item 9: a range deleted by one user is
// hidden from that user only, in every month, in sync and history alike.
func TestShard09UserDeleteRangeAcrossMonths(t *testing.T) {
	srv := Start(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tokA, tokB := srv.User(3201), srv.User(3202)
	topic := srv.Group(9, 3201, 3202)
	a, b := srv.Connect(ctx, tokA, 1), srv.Connect(ctx, tokB, 1)
	bOther := srv.Connect(ctx, tokB, 2)
	sendN(t, ctx, a, topic, "sep", 5)
	srv.Advance(Month(1))
	sendN(t, ctx, a, topic, "oct", 5)

	t.Run("invalid ranges are 40001", func(t *testing.T) {
		for _, r := range [][2]int64{{0, 3}, {3, 3}, {5, 2}, {1, 100_002}, {11, 20}} {
			assertCode(t, deleteRange(ctx, b, topic, r[0], r[1]), wire.CodeInvalidArgument)
		}
	})
	t.Run("a non-member cannot delete", func(t *testing.T) {
		c := srv.Connect(ctx, srv.User(3203), 1)
		assertCode(t, deleteRange(ctx, c, topic, 1, 3), wire.CodeForbidden)
	})
	if err := deleteRange(ctx, b, topic, 3, 8); err != nil {
		t.Fatal(err)
	}
	sendN(t, ctx, a, topic, "after", 1)

	historyOf := func(c *client.Conn, before int64, limit int) []int64 {
		msgs, err := c.History(ctx, topic, before, limit)
		if err != nil {
			t.Fatal(err)
		}
		return seqsOf(msgs)
	}
	syncOf := func(c *client.Conn, since int64, limit int) []int64 {
		msgs, _, err := c.SyncMessages(ctx, topic, since, limit)
		if err != nil {
			t.Fatal(err)
		}
		return seqsOf(msgs)
	}
	tests := []struct {
		name string
		got  []int64
		want []int64
	}{
		{"sync, the user", syncOf(b, 0, 200), []int64{1, 2, 8, 9, 10, 11}},
		{"sync, the user's other device", syncOf(bOther, 0, 200), []int64{1, 2, 8, 9, 10, 11}},
		{"sync paged into the range", syncOf(b, 2, 2), []int64{8, 9}},
		{"sync, the other member", syncOf(a, 0, 200), seqRange(1, 11)},
		{"history, the user", historyOf(b, 0, 50), []int64{11, 10, 9, 8, 2, 1}},
		{"history paged across the boundary", historyOf(b, 9, 2), []int64{8, 2}},
		{"history, the other member", historyOf(a, 0, 4), []int64{11, 10, 9, 8}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !slices.Equal(tt.got, tt.want) {
				t.Fatalf("seqs %v, want %v", tt.got, tt.want)
			}
		})
	}
	t.Run("the range is one dellog row and the messages stay", func(t *testing.T) {
		db := srv.TenantDB()
		var low, hi int64
		if err := db.QueryRow("SELECT low, hi FROM im_dellog WHERE topic = ? AND deletedfor = ?", topic, 3202).Scan(&low, &hi); err != nil || low != 3 || hi != 8 {
			t.Fatalf("dellog row [%d, %d), %v", low, hi, err)
		}
		if n := countRows(t, db, "SELECT COUNT(*) FROM im_dellog"); n != 1 {
			t.Fatalf("%d dellog rows", n)
		}
		all := append(srv.SeqsInTable(db, Month(0), topic), srv.SeqsInTable(db, Month(1), topic)...)
		if !slices.Equal(all, seqRange(1, 11)) {
			t.Fatalf("stored seqs %v", all)
		}
	})
	t.Run("the admin sees everything", func(t *testing.T) {
		var out struct {
			Messages []wire.Message `json:"messages"`
		}
		srv.MustAdmin("GET", "/topics/"+topic+"/messages?since=0&limit=50", nil, &out)
		if got := seqsOf(out.Messages); !slices.Equal(got, seqRange(1, 11)) {
			t.Fatalf("admin sees %v", got)
		}
	})
}

func TestDeleteForAllByTheGroupOwner(t *testing.T) {
	srv := Start(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tokOwner, tokA, tokB := srv.User(3301), srv.User(3302), srv.User(3303)
	topic := srv.Group(33, 3301, 3302, 3303)
	owner, a, b := srv.Connect(ctx, tokOwner, 1), srv.Connect(ctx, tokA, 1), srv.Connect(ctx, tokB, 1)
	ack, err := a.Send(ctx, textMessage(topic, "spam-1", "spam"))
	if err != nil {
		t.Fatal(err)
	}
	collectMessages(t, b, 1, 10*time.Second)
	forAll := func(c *client.Conn, seq int64) error {
		return change(ctx, c, wire.CmdDeleteMessages, map[string]any{"topic": topic, "low": seq, "hi": seq + 1, "for_all": true}, nil)
	}
	assertCode(t, forAll(b, ack.Seq), wire.CodeForbidden)
	assertCode(t, change(ctx, owner, wire.CmdDeleteMessages, map[string]any{"topic": topic, "low": 1, "hi": 3, "for_all": true}, nil), wire.CodeInvalidArgument)
	if err := forAll(owner, ack.Seq); err != nil {
		t.Fatal(err)
	}
	if _, e := awaitEvent(t, b, 10*time.Second); e != (topicEvent{Event: "delete", Seq: ack.Seq}) {
		t.Fatalf("event %+v", e)
	}
	msgs := syncAll(t, ctx, b, topic)
	if len(msgs) != 2 || msgs[0].Status != wire.StatusDeleted || string(msgs[0].Content) != "{}" {
		t.Fatalf("sync after delete for all: %+v", msgs)
	}
	if hist, err := b.History(ctx, topic, 0, 10); err != nil || !slices.Equal(seqsOf(hist), []int64{2}) {
		t.Fatalf("history after delete for all: %v, %v", seqsOf(hist), err)
	}
}

// TestRecallInBigGroupWritesConstantRows: a recall in a 1,000-member group writes the changed
// row, one revision and one event message — no mailbox row, nothing per member (DESIGN §1).
func TestRecallInBigGroupWritesConstantRows(t *testing.T) {
	srv := Start(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const members = 1000
	ids := make([]int64, members)
	for i := range ids {
		ids[i] = 40_001 + int64(i)
	}
	tokens := []string{srv.User(ids[0]), srv.User(ids[1])}
	for _, id := range ids[2:] {
		srv.MustAdmin("POST", "/users", map[string]any{"user_id": id}, nil)
	}
	topic := srv.Group(34, ids[0], ids[1:]...)
	sender, online := srv.Connect(ctx, tokens[0], 1), srv.Connect(ctx, tokens[1], 1)
	ack, err := sender.Send(ctx, textMessage(topic, "big-1", "to everyone"))
	if err != nil {
		t.Fatal(err)
	}
	collectMessages(t, online, 1, 10*time.Second)

	db := srv.TenantDB()
	// counts reads the rows once the deliver queue drained, so the setup's background work
	// (membership events, deliver jobs) is not mistaken for the recall's, and the recall's own
	// job has written all it writes.
	counts := func() [3]int64 {
		deliveryDrained(t, srv, 30*time.Second)
		return [3]int64{
			countRows(t, db, "SELECT COUNT(*) FROM t_mailbox_events"),
			countRows(t, db, fmt.Sprintf("SELECT COUNT(*) FROM im_group_messages_%s WHERE topic = ?", Month(0)), topic),
			countRows(t, db, "SELECT COUNT(*) FROM im_message_revisions"),
		}
	}
	before := counts()
	if _, err := recall(ctx, sender, topic, ack.Seq); err != nil {
		t.Fatal(err)
	}
	awaitEvent(t, online, 10*time.Second)
	after := counts()
	if want := [3]int64{before[0], before[1] + 1, before[2] + 1}; after != want {
		t.Fatalf("rows (mailbox, messages, revisions) went from %v to %v, want %v", before, after, want)
	}
}
