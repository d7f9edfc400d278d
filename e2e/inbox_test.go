package e2e

// Conversation lists, mailbox, two-level sync and READ (seed 003 §11–§14) through the real
// binary, MariaDB and Redis: the items of seed 003 §23 they cover.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/imdhq/imd/clients/go/client"
	"github.com/imdhq/imd/clients/go/frame"
	"github.com/imdhq/imd/clients/go/wire"
)

// syncInbox runs SYNC_INBOX and returns its dialogs and events over all pages, and the FINISH.
func syncInbox(t *testing.T, ctx context.Context, c *client.Conn, req wire.SyncInboxRequest) ([]wire.Dialog, []wire.Event, wire.SyncInboxFinish) {
	t.Helper()
	envs, err := c.RequestStream(ctx, wire.CmdSyncInbox, req)
	if err != nil {
		t.Fatalf("SYNC_INBOX: %v", err)
	}
	var (
		dialogs []wire.Dialog
		events  []wire.Event
		finish  wire.SyncInboxFinish
	)
	last := envs[len(envs)-1]
	if last.Code != wire.CodeOK {
		t.Fatalf("SYNC_INBOX: code %d %s", last.Code, last.Msg)
	}
	if err := json.Unmarshal(last.Data, &finish); err != nil {
		t.Fatal(err)
	}
	for _, env := range envs[:len(envs)-1] {
		var page wire.SyncInboxPage
		if err := json.Unmarshal(env.Data, &page); err != nil {
			t.Fatal(err)
		}
		dialogs = append(dialogs, page.Dialogs...)
		events = append(events, page.Events...)
	}
	return dialogs, events, finish
}

// dialogOf returns the dialog of topic from a full SYNC_INBOX; ok=false when it is not listed.
func dialogOf(t *testing.T, ctx context.Context, c *client.Conn, topic string) (wire.Dialog, bool) {
	t.Helper()
	dialogs, _, _ := syncInbox(t, ctx, c, wire.SyncInboxRequest{})
	for _, d := range dialogs {
		if d.Topic == topic {
			return d, true
		}
	}
	return wire.Dialog{}, false
}

// readMessage sends READ_MESSAGE with body (a struct or raw JSON) and returns the watermark.
func readMessage(ctx context.Context, c *client.Conn, body any) (wire.ReadResponse, error) {
	env, err := c.Request(ctx, wire.CmdReadMessage, body)
	if err != nil {
		return wire.ReadResponse{}, err
	}
	if env.Code != wire.CodeOK {
		return wire.ReadResponse{}, &client.CodeError{Code: env.Code, Msg: env.Msg}
	}
	var w wire.ReadResponse
	err = json.Unmarshal(env.Data, &w)
	return w, err
}

// awaitPush waits for the next push with command cmd, skipping others.
func awaitPush(t *testing.T, c *client.Conn, cmd uint16, limit time.Duration) client.Push {
	t.Helper()
	deadline := time.After(limit)
	for {
		select {
		case p, ok := <-c.Pushes():
			if !ok {
				t.Fatalf("connection closed waiting for command %d", cmd)
			}
			if p.Command == cmd {
				return p
			}
		case <-deadline:
			t.Fatalf("no command %d within %v", cmd, limit)
		}
	}
}

func (s *Server) unreadInRedis(rc rueidis.Client, user, conversationID int64) int64 {
	s.t.Helper()
	key := s.Keys().DialogUnreadCount(user)
	n, err := rc.Do(context.Background(), rc.B().Hget().Key(key).Field(strconv.FormatInt(conversationID, 10)).Build()).AsInt64()
	if rueidis.IsRedisNil(err) {
		return 0
	}
	if err != nil {
		s.t.Fatal(err)
	}
	return n
}

// dropTenantKeys deletes every Redis key of the tenant, as a FLUSHALL would for it; other
// tests share the server, so FLUSHALL itself is not an option. The keys are listed first and
// deleted in one pipeline: deleted page by page, a node's renewal between two pages would
// write again what a later page deletes (a node's presence claimed again, then lost with its
// lease standing), a loss no FLUSHALL causes.
func (s *Server) dropTenantKeys(rc rueidis.Client) {
	s.t.Helper()
	ctx := context.Background()
	var keys []string
	for cursor := uint64(0); ; {
		e, err := rc.Do(ctx, rc.B().Scan().Cursor(cursor).Match(s.keyPattern("*")).Count(1000).Build()).AsScanEntry()
		if err != nil {
			s.t.Fatal(err)
		}
		keys = append(keys, e.Elements...)
		if cursor = e.Cursor; cursor == 0 {
			break
		}
	}
	s.delKeys(rc, keys)
}

func TestInboxOfflineUserSeesTheConversationThenSyncsItsMessages(t *testing.T) {
	srv := Start(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tokA, tokB := srv.User(501), srv.User(502)
	topic := srv.Group(50, 501, 502)
	db := srv.TenantDB()
	mailboxRows := countRows(t, db, "SELECT COUNT(*) FROM t_mailbox_events") // membership events
	a := srv.Connect(ctx, tokA, 1)
	for i := range 3 {
		if _, err := a.Send(ctx, textMessage(topic, fmt.Sprint("off-", i), fmt.Sprint("while you were away ", i))); err != nil {
			t.Fatal(err)
		}
	}
	rc := srv.Redis()
	eventually(t, 10*time.Second, "B's unread count", func() bool { return unreadOf(srv, rc, 502, topic) == 3 })

	b := srv.Connect(ctx, tokB, 1)
	dialogs, events, _ := syncInbox(t, ctx, b, wire.SyncInboxRequest{})
	var (
		d  wire.Dialog
		ok bool
	)
	for _, x := range dialogs {
		if x.Topic == topic {
			d, ok = x, true
		}
	}
	if !ok {
		t.Fatal("the offline user's SYNC_INBOX does not list the conversation")
	}
	if hasType(events, "missed_message") {
		t.Fatalf("an offline user got a MISSED_MESSAGE event: %v", events)
	}
	var preview struct {
		Seq  int64  `json:"seq"`
		Text string `json:"text"`
		From int64  `json:"from"`
	}
	if err := json.Unmarshal(d.Preview, &preview); err != nil {
		t.Fatalf("preview %s: %v", d.Preview, err)
	}
	if d.Unread != 3 || d.LastSeq != 3 || d.ReadSeq != 0 || d.ConversationID == 0 || preview.Seq != 3 || preview.From != 501 || preview.Text != "while you were away 2" {
		t.Fatalf("dialog %+v preview %+v", d, preview)
	}
	msgs, fin, err := b.SyncMessages(ctx, topic, d.ReadSeq, 50)
	if err != nil || len(msgs) != 3 || fin.LastSeq != 3 || msgs[0].Seq != 1 {
		t.Fatalf("SYNC_MESSAGES after the inbox: %d messages, %+v, %v", len(msgs), fin, err)
	}
	if n := countRows(t, db, "SELECT COUNT(*) FROM t_mailbox_events"); n != mailboxRows {
		t.Fatalf("%d mailbox rows after the sends, %d before; offline users get none", n, mailboxRows)
	}
	t.Run("the device cursor is stored and the next sync is empty", func(t *testing.T) {
		_, _, fin := syncInbox(t, ctx, b, wire.SyncInboxRequest{})
		dialogs, events, again := syncInbox(t, ctx, b, wire.SyncInboxRequest{MailboxSeq: fin.MailboxSeq, DialogScore: fin.DialogScore})
		if len(dialogs) != 0 || len(events) != 0 || again.HasMore {
			t.Fatalf("sync from the finish cursors: %d dialogs, %d events, %+v", len(dialogs), len(events), again)
		}
		if got := countRows(t, srv.TenantDB(), "SELECT dialog_score FROM t_device_sync_cursors WHERE user_id = 502 AND device_id = 1"); got != fin.DialogScore {
			t.Fatalf("stored dialog_score %d, want %d", got, fin.DialogScore)
		}
	})
}

func TestInboxOnlinePushWritesNoMailboxRowAndReachesTheSendersOtherDevice(t *testing.T) {
	srv := Start(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tokA, tokB := srv.User(511), srv.User(512)
	topic := srv.Group(51, 511, 512)
	db := srv.TenantDB()
	mailboxRows := countRows(t, db, "SELECT COUNT(*) FROM t_mailbox_events") // membership events
	a1, a2, b := srv.Connect(ctx, tokA, 1), srv.Connect(ctx, tokA, 2), srv.Connect(ctx, tokB, 1)
	ack, err := a1.Send(ctx, textMessage(topic, "on-1", "hello"))
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]*client.Conn{"recipient": b, "sender's second device": a2} {
		if p := awaitPush(t, c, wire.CmdMessage, 10*time.Second); p.Message == nil || p.Message.Seq != ack.Seq {
			t.Fatalf("%s got %+v", name, p)
		}
	}
	assertNoMessage(t, a1, 300*time.Millisecond)
	if n := countRows(t, db, "SELECT COUNT(*) FROM t_mailbox_events"); n != mailboxRows {
		t.Fatalf("%d mailbox rows after successful pushes, %d before; want no new one", n, mailboxRows)
	}
	if d, ok := dialogOf(t, ctx, a2, topic); !ok || d.Unread != 0 {
		t.Fatalf("sender's dialog %+v (listed %v): the sender's own message is never unread", d, ok)
	}
}

func TestInboxUnacknowledgedPushLeavesAMissedMessageRow(t *testing.T) {
	srv := Start(t, Options{Env: map[string]string{"IMD_TCP_PUSH_ACK_TIMEOUT": "1s"}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tokA, tokB := srv.User(561), srv.User(562)
	topic := srv.Group(56, 561, 562)
	a := srv.Connect(ctx, tokA, 1)

	// Device 9 of B authenticates by hand and then never answers a push with PUSH_ACK.
	raw, err := net.Dial("tcp", srv.TCPAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	body, _ := json.Marshal(wire.AuthRequest{Token: tokB, DeviceID: 9})
	auth, err := frame.Append(nil, wire.CmdAuth, 1, 1, body, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Write(auth); err != nil {
		t.Fatal(err)
	}
	awaitResponse(t, raw, 1) // AUTH done before the send
	ack, err := a.Send(ctx, textMessage(topic, "unacked-1", "did you get it?"))
	if err != nil {
		t.Fatal(err)
	}
	db := srv.TenantDB()
	eventually(t, 15*time.Second, "a MISSED_MESSAGE row for device 9", func() bool {
		return countRows(t, db, "SELECT COUNT(*) FROM t_mailbox_events WHERE user_id = 562 AND device_id = 9 AND event_type = 5") == 1
	})
	raw.Close()

	b := srv.Connect(ctx, tokB, 9)
	_, events, _ := syncInbox(t, ctx, b, wire.SyncInboxRequest{})
	var found bool
	for _, e := range events {
		var msgID int64
		_ = json.Unmarshal(e["msg_id"], &msgID)
		if string(e["type"]) == `"missed_message"` && msgID == ack.MsgID {
			found = true
		}
	}
	if !found {
		t.Fatalf("SYNC_INBOX of device 9 has no missed_message for msg %d: %v", ack.MsgID, events)
	}
	other := srv.Connect(ctx, tokB, 10)
	if _, events, _ := syncInbox(t, ctx, other, wire.SyncInboxRequest{}); hasType(events, "missed_message") {
		t.Fatalf("another device of B sees device 9's missed message: %v", events)
	}
}

// awaitResponse reads frames from c until the response to requestID, whose code must be OK.
func awaitResponse(t *testing.T, c net.Conn, requestID uint64) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(15 * time.Second))
	defer c.SetReadDeadline(time.Time{})
	var buf []byte
	chunk := make([]byte, 4096)
	for {
		f, n, err := frame.Decode(buf)
		switch {
		case err == nil:
			buf = buf[n:]
			if f.RequestID != requestID {
				continue
			}
			var env struct{ Code int }
			if err := json.Unmarshal(f.Body, &env); err != nil || env.Code != wire.CodeOK {
				t.Fatalf("response to request %d: code %d (%v), want OK", requestID, env.Code, err)
			}
			return
		case !errors.Is(err, frame.ErrIncomplete):
			t.Fatalf("reading the response to request %d: %v", requestID, err)
		}
		m, err := c.Read(chunk)
		if err != nil {
			t.Fatalf("reading the response to request %d: %v", requestID, err)
		}
		buf = append(buf, chunk[:m]...)
	}
}

func hasType(events []wire.Event, typ string) bool {
	for _, e := range events {
		if string(e["type"]) == strconv.Quote(typ) {
			return true
		}
	}
	return false
}

func TestInboxReadReachesTheOtherDevice(t *testing.T) {
	srv := Start(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tokA, tokB := srv.User(521), srv.User(522)
	srv.User(523)
	topic := srv.Group(52, 521, 522)
	a := srv.Connect(ctx, tokA, 1)
	b1, b2 := srv.Connect(ctx, tokB, 1), srv.Connect(ctx, tokB, 2)
	var acks []wire.SendAck
	for i := range 3 {
		ack, err := a.Send(ctx, textMessage(topic, fmt.Sprint("r-", i), "read me"))
		if err != nil {
			t.Fatal(err)
		}
		acks = append(acks, ack)
	}
	collectMessages(t, b2, 3, 10*time.Second)
	if d, _ := dialogOf(t, ctx, b2, topic); d.Unread != 3 {
		t.Fatalf("unread before READ = %d, want 3", d.Unread)
	}

	w, err := readMessage(ctx, b1, wire.ReadRequest{Topic: topic, Seq: 2})
	if err != nil {
		t.Fatal(err)
	}
	want := wire.ReadResponse{Topic: topic, ConversationID: acks[1].ConversationID, Seq: 2, MsgID: acks[1].MsgID}
	if w != want {
		t.Fatalf("READ answered %+v, want %+v", w, want)
	}
	p := awaitPush(t, b2, wire.CmdReadMessage, 10*time.Second)
	var pushed wire.ReadResponse
	if err := json.Unmarshal(p.Envelope.Data, &pushed); err != nil || pushed != want {
		t.Fatalf("other device got cmd 8 %s (%v), want %+v", p.Envelope.Data, err, want)
	}
	if d, _ := dialogOf(t, ctx, b2, topic); d.Unread != 0 || d.ReadSeq != 2 {
		t.Fatalf("after READ: unread %d read_seq %d, want 0 and 2", d.Unread, d.ReadSeq)
	}

	conv := acks[0].ConversationID
	t.Run("the watermark never moves back", func(t *testing.T) {
		w, err := readMessage(ctx, b1, wire.ReadRequest{ConversationID: conv, MsgID: acks[0].MsgID})
		if err != nil || w.Seq != 2 || w.MsgID != acks[1].MsgID {
			t.Fatalf("READ of an older message = %+v, %v; want the stored seq 2", w, err)
		}
	})
	t.Run("the last_msg_id form with peer_id", func(t *testing.T) {
		w, err := readMessage(ctx, b1, wire.ReadRequest{ConversationID: conv, LastMsgID: acks[2].MsgID, PeerID: 521})
		if err != nil || w.Seq != 3 || w.MsgID != acks[2].MsgID {
			t.Fatalf("READ = %+v, %v", w, err)
		}
		awaitPush(t, b2, wire.CmdReadMessage, 10*time.Second)
	})
	t.Run("codes", func(t *testing.T) {
		outsider := srv.Connect(ctx, srv.User(523), 1)
		cases := []struct {
			name string
			c    *client.Conn
			body any
			code int
		}{
			{"conversation_id missing", b1, json.RawMessage(fmt.Sprintf(`{"msg_id":%d}`, acks[0].MsgID)), wire.CodeInvalidArgument},
			{"both ids not positive", b1, json.RawMessage(fmt.Sprintf(`{"conversation_id":%d,"msg_id":0,"last_msg_id":-1}`, conv)), wire.CodeInvalidArgument},
			{"message not found", b1, wire.ReadRequest{ConversationID: conv, MsgID: acks[0].MsgID + 1_000_000}, wire.CodeNotFound},
			{"not a member", outsider, wire.ReadRequest{ConversationID: conv, MsgID: acks[0].MsgID}, wire.CodeForbidden},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				_, err := readMessage(ctx, c.c, c.body)
				assertCode(t, err, c.code)
			})
		}
	})
}

func TestInboxKillAfterAckBeforeDeliveryDeliversOnce(t *testing.T) {
	env := map[string]string{"IMD_DELIVER_PARTITIONS": "1", "IMD_DELIVER_TAKE_TIMEOUT": "1s"}
	srv := Start(t, Options{Env: env})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tokA, tokB := srv.User(531), srv.User(532)
	topic := srv.Group(53, 531, 532)
	a := srv.Connect(ctx, tokA, 1)
	if _, err := a.Send(ctx, textMessage(topic, "k-0", "before")); err != nil {
		t.Fatal(err)
	}
	rc := srv.Redis()
	eventually(t, 10*time.Second, "first message counted", func() bool { return unreadOf(srv, rc, 532, topic) == 1 })

	// Play a worker that dies right after taking the job: block on the queue first, then wait
	// out the real worker's 1 s BLMOVE, so Redis (which serves blocked clients in order) hands
	// the job to this client. It lands in processing, where a crashed worker leaves it.
	queue, processing := srv.Keys().DeliverQueue(), srv.Keys().DeliverProcessing()
	taken := make(chan string, 1)
	go func() {
		raw, err := rc.Do(ctx, rc.B().Blmove().Source(queue).Destination(processing).Left().Right().Timeout(10).Build()).ToString()
		if err != nil {
			raw = ""
		}
		taken <- raw
	}()
	// No event says the BLMOVE is blocked in Redis yet; the send must find it waiting.
	time.Sleep(1500 * time.Millisecond)
	ack, err := a.Send(ctx, textMessage(topic, "k-1", "after the ack"))
	if err != nil {
		t.Fatal(err)
	}
	job := <-taken
	if job == "" {
		t.Fatal("the real worker took the job; the crash could not be staged")
	}
	srv.Kill()
	if got := unreadOf(srv, rc, 532, topic); got != 1 {
		t.Fatalf("unread %d before the restart: the job must not have acted", got)
	}
	// The same job twice in processing: a crash mid-job, then a rerun, must still count once.
	if err := rc.Do(ctx, rc.B().Rpush().Key(processing).Element(job).Build()).Error(); err != nil {
		t.Fatal(err)
	}

	again := Start(t, Options{Tenant: srv.Tenant, Env: map[string]string{"IMD_DELIVER_PARTITIONS": "1", "IMD_NODE_ID": "2"}})
	b := again.Connect(ctx, tokB, 1)
	eventually(t, 15*time.Second, "the requeued job to act", func() bool {
		n, err := rc.Do(ctx, rc.B().Llen().Key(processing).Build()).AsInt64()
		m, err2 := rc.Do(ctx, rc.B().Llen().Key(queue).Build()).AsInt64()
		return err == nil && err2 == nil && n == 0 && m == 0
	})
	if got := unreadOf(again, rc, 532, topic); got != 2 {
		t.Fatalf("unread %d after the restart, want 2 (+1, not +2)", got)
	}
	d, ok := dialogOf(t, ctx, b, topic)
	if !ok || d.Unread != 2 || d.LastSeq != ack.Seq {
		t.Fatalf("dialog after restart %+v (listed %v)", d, ok)
	}
	msgs, _, err := b.SyncMessages(ctx, topic, 0, 50)
	if err != nil || len(msgs) != 2 || msgs[1].Seq != ack.Seq || msgs[1].MsgID != ack.MsgID {
		t.Fatalf("SYNC_MESSAGES after restart: %+v, %v", msgs, err)
	}
	done, err := rc.Do(ctx, rc.B().Exists().Key(srv.Keys().DeliverDone(fmt.Sprintf("m%d", ack.MsgID))).Build()).AsInt64()
	if err != nil || done != 1 {
		t.Fatalf("deliver:done of the job = %d, %v; want it acted", done, err)
	}
}

// unreadOf reads a user's unread count of topic's conversation from Redis.
func unreadOf(srv *Server, rc rueidis.Client, user int64, topic string) int64 {
	var id int64
	if err := srv.TenantDB().QueryRow("SELECT id FROM t_conversations WHERE topic = ?", topic).Scan(&id); err != nil {
		srv.t.Fatal(err)
	}
	return srv.unreadInRedis(rc, user, id)
}

func TestInboxRedisLossRebuildsListsFromMySQL(t *testing.T) {
	srv := Start(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tokA, tokB := srv.User(541), srv.User(542)
	topic := srv.Group(54, 541, 542)
	a, b := srv.Connect(ctx, tokA, 1), srv.Connect(ctx, tokB, 1)
	for i := range 3 {
		if _, err := a.Send(ctx, textMessage(topic, fmt.Sprint("loss-", i), "kept in MySQL")); err != nil {
			t.Fatal(err)
		}
	}
	collectMessages(t, b, 3, 10*time.Second)
	if _, err := readMessage(ctx, b, wire.ReadRequest{Topic: topic, Seq: 1}); err != nil {
		t.Fatal(err)
	}

	srv.dropTenantKeys(srv.Redis())

	d, ok := dialogOf(t, ctx, b, topic)
	if !ok || d.Unread != 2 || d.ReadSeq != 1 || d.LastSeq != 3 || d.Score == 0 {
		t.Fatalf("rebuilt dialog %+v (listed %v), want unread 2 = last seq 3 - read seq 1", d, ok)
	}
	msgs, _, err := b.SyncMessages(ctx, topic, 0, 50)
	if err != nil || len(msgs) != 3 {
		t.Fatalf("history after the loss: %d messages, %v", len(msgs), err)
	}
	ack, err := a.Send(ctx, textMessage(topic, "loss-after", "seq goes on"))
	if err != nil || ack.Seq != 4 {
		t.Fatalf("send after the loss: %+v, %v; want seq 4", ack, err)
	}
	awaitPush(t, b, wire.CmdMessage, 10*time.Second)
	if d, _ := dialogOf(t, ctx, b, topic); d.Unread != 3 || d.LastSeq != 4 {
		t.Fatalf("after a new message: %+v, want unread 3, last seq 4", d)
	}
	t.Run("admin rebuild", func(t *testing.T) {
		var out struct {
			UserID        int64 `json:"user_id"`
			Conversations int   `json:"conversations"`
		}
		srv.MustAdmin("POST", "/users/542/dialogs/rebuild", nil, &out)
		if out.UserID != 542 || out.Conversations != 1 {
			t.Fatalf("rebuild answered %+v", out)
		}
		if d, _ := dialogOf(t, ctx, b, topic); d.Unread != 3 || d.ReadSeq != 1 {
			t.Fatalf("after the admin rebuild: %+v", d)
		}
		if code := srv.Admin("POST", "/users/0/dialogs/rebuild", nil, nil); code != 400 {
			t.Fatalf("rebuild of user 0: HTTP %d", code)
		}
	})
	t.Run("muted conversations are listed read", func(t *testing.T) {
		srv.MustAdmin("PUT", fmt.Sprintf("/users/542/dialogs/%d", ack.ConversationID), map[string]bool{"muted": true}, nil)
		if _, err := readMessage(ctx, b, wire.ReadRequest{Topic: topic, Seq: 4}); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Send(ctx, textMessage(topic, "loss-muted", "shh")); err != nil {
			t.Fatal(err)
		}
		awaitPush(t, b, wire.CmdMessage, 10*time.Second)
		if d, _ := dialogOf(t, ctx, b, topic); d.Unread != 0 || !d.Muted || d.LastSeq != 5 {
			t.Fatalf("muted dialog %+v, want re-scored, muted, nothing unread", d)
		}
	})
}

func TestInboxBigGroupSendWritesConstantRows(t *testing.T) {
	srv := Start(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const members = 1000
	ids := make([]int64, members)
	for i := range ids {
		ids[i] = 60_001 + int64(i)
	}
	tokens := []string{srv.User(ids[0]), srv.User(ids[1])}
	for _, id := range ids[2:] {
		srv.MustAdmin("POST", "/users", map[string]any{"user_id": id}, nil)
	}
	topic := srv.Group(55, ids[0], ids[1:]...)
	sender, online := srv.Connect(ctx, tokens[0], 1), srv.Connect(ctx, tokens[1], 1)

	db := srv.TenantDB()
	counts := func() [3]int64 {
		return [3]int64{
			countRows(t, db, "SELECT COUNT(*) FROM t_mailbox_events"),
			countRows(t, db, fmt.Sprintf("SELECT COUNT(*) FROM im_group_messages_%s WHERE topic = ?", Month(0)), topic),
			countRows(t, db, "SELECT COALESCE(SUM(last_read_seq), 0) FROM t_conversation_members"),
		}
	}
	before := counts()
	const sends = 5
	var last wire.SendAck
	for i := range sends {
		ack, err := sender.Send(ctx, textMessage(topic, fmt.Sprint("big-", i), "to a thousand"))
		if err != nil {
			t.Fatal(err)
		}
		last = ack
	}
	collectMessages(t, online, sends, 20*time.Second)
	rc := srv.Redis()
	eventually(t, 20*time.Second, "every member counted", func() bool {
		return srv.unreadInRedis(rc, ids[members-1], last.ConversationID) == sends
	})
	after := counts()
	if want := [3]int64{before[0], before[1] + sends, before[2]}; after != want {
		t.Fatalf("rows (mailbox, messages, read state) went from %v to %v, want %v", before, after, want)
	}
	cmds := make(rueidis.Commands, 0, members)
	for _, id := range ids {
		key := srv.Keys().DialogUnreadCount(id)
		cmds = append(cmds, rc.B().Hget().Key(key).Field(strconv.FormatInt(last.ConversationID, 10)).Build())
	}
	for i, r := range rc.DoMulti(ctx, cmds...) {
		n, err := r.AsInt64()
		if rueidis.IsRedisNil(err) {
			n, err = 0, nil
		}
		want := int64(sends)
		if i == 0 {
			want = 0 // the sender
		}
		if err != nil || n != want {
			t.Fatalf("member %d unread %d (%v), want %d", ids[i], n, err, want)
		}
	}
}
