package receipts_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/memory"
	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/delivery"
	"github.com/imdhq/imd/core/domain/dialog"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/social"
	"github.com/imdhq/imd/core/loop/shardmanager"
	"github.com/imdhq/imd/core/store/membership"
	"github.com/imdhq/imd/core/usecase/conversation"
	"github.com/imdhq/imd/core/usecase/history"
	"github.com/imdhq/imd/core/usecase/read"
	"github.com/imdhq/imd/core/usecase/receipts"
	"github.com/imdhq/imd/core/usecase/send"
	"github.com/imdhq/imd/ports"
)

const tenant = "acme"

// world is receipts over the memory fakes, with the send and read paths that feed them.
type world struct {
	svc      *receipts.Service
	reads    *read.Service
	sender   *send.Service
	pushes   *memory.Pushes
	settings *memory.Presence
	metrics  *memory.Metrics
	marks    ports.ReadReceipts
}

// newWorld creates users 1..users, friends 1 and 2, and group 10 (conversation 100) of the
// users 1..members; READ_STATE lists readers up to limit members.
func newWorld(tb testing.TB, users, members int64, limit int) *world {
	tb.Helper()
	return newWorldWith(tb, users, members, limit, nil)
}

// newWorldWith is newWorld whose receipts know the push token holders.
func newWorldWith(tb testing.TB, users, members int64, limit int, holders receipts.TokenHolders) *world {
	tb.Helper()
	ctx := context.Background()
	clock := memory.NewClock(time.Date(2026, 5, 14, 10, 0, 0, 0, time.UTC))
	shards := memory.NewShardStore()
	store := memory.NewMessageStore(shards)
	months := memory.NewMonthState(clock.Now)
	dir := memory.NewDirectory()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ids := memory.NewIDs(clock)
	routes := memory.NewRouteCache()
	w := &world{pushes: &memory.Pushes{}, settings: memory.NewPresence(), metrics: memory.NewMetrics()}
	manager := shardmanager.New(shardmanager.Config{SealingDays: 7}, shardmanager.Deps{Store: shards, Months: months, Metrics: w.metrics, Log: log, Sleep: clock.Sleep})
	if err := manager.Ensure(ctx, tenant); err != nil {
		tb.Fatal(err)
	}
	cache := membership.New(dir, clock, time.Minute)
	resolver := conversation.NewResolver(dir, ids, cache)
	seqs := memory.NewSeqAllocator(months, clock.Now)
	w.sender = send.New(send.Config{MsgIDWindow: time.Minute}, send.Deps{
		Seq: seqs, Store: store, FollowUp: &memory.CommitFollowUp{Routes: routes, Queue: memory.NewDeliverQueue(clock.Now), Seqs: seqs},
		IDs: ids, Clock: clock, Metrics: w.metrics, Resolver: resolver, Log: log, Months: manager,
	})
	hist := history.New(history.Deps{Store: store, Routes: routes, Months: months, Metrics: w.metrics, Resolver: resolver, Log: log})
	marks := memory.NewReadStore(dir, shards)
	w.marks = memory.NewReceipts(dir, marks, w.settings)
	w.svc = receipts.New(receipts.Config{GroupLimit: limit}, receipts.Deps{
		Resolver: resolver, History: hist, Members: cache, Receipts: w.marks,
		Settings: w.settings, Pusher: w.pushes, Metrics: w.metrics, Log: log, Holders: holders,
	})
	w.reads = read.New(read.Deps{
		Resolver: resolver, History: hist, Finder: store, IDs: ids, Shards: shards, Reads: marks,
		Dialogs: memory.NewDialogStore(clock.Now), Queue: memory.NewDeliverQueue(clock.Now), Receipts: w.svc, Log: log,
	})
	for u := int64(1); u <= users; u++ {
		if err := dir.CreateUser(ctx, tenant, social.User{ID: u}); err != nil {
			tb.Fatal(err)
		}
	}
	if err := dir.AddFriendship(ctx, tenant, 1, 2); err != nil {
		tb.Fatal(err)
	}
	in := make([]int64, 0, members)
	for u := int64(2); u <= members; u++ {
		in = append(in, u)
	}
	if _, err := dir.CreateGroup(ctx, tenant, social.Group{ID: 10, Owner: 1}, 100, in, 0); err != nil {
		tb.Fatal(err)
	}
	return w
}

// send stores a text from user 1 and returns it.
func (w *world) send(tb testing.TB, a conversation.Address, n int) message.Message {
	tb.Helper()
	res, err := w.sender.Send(context.Background(), send.Request{
		Tenant: tenant, From: 1, FromDevice: 1, Address: a,
		Draft: message.Draft{ClientMsgID: "c" + strconv.Itoa(n), Type: "text", Content: json.RawMessage(`{"text":"hi"}`)},
	})
	if err != nil {
		tb.Fatal(err)
	}
	return res.Message
}

func (w *world) read(tb testing.TB, user int64, topic string, seq int64) {
	tb.Helper()
	if _, err := w.reads.Read(context.Background(), read.Request{Tenant: tenant, User: user, Device: 1, Topic: topic, Seq: seq}); err != nil {
		tb.Fatal(err)
	}
}

func (w *world) hide(tb testing.TB, user int64) {
	tb.Helper()
	hide := true
	if _, err := w.settings.ChangeSettings(context.Background(), tenant, user, social.SettingsChange{HideReceipts: &hide}); err != nil {
		tb.Fatal(err)
	}
}

// receiptsOf decodes the RECEIPT pushes handed over since the last call, each with its one recipient.
func (w *world) receiptsOf(t *testing.T) map[int64][]receipts.Receipt {
	t.Helper()
	out := map[int64][]receipts.Receipt{}
	for _, a := range w.pushes.Take() {
		if a.Push.Kind != delivery.KindReceipt || len(a.Target.Recipients) != 1 || !a.Target.NotPush || !a.Target.NotMailbox {
			t.Fatalf("push %+v is no live receipt to one user", a)
		}
		var r receipts.Receipt
		if err := json.Unmarshal(a.Push.Data, &r); err != nil {
			t.Fatal(err)
		}
		out[a.Target.Recipients[0]] = append(out[a.Target.Recipients[0]], r)
	}
	return out
}

func TestP2PReadAndDeliveredReachTheSender(t *testing.T) {
	w := newWorld(t, 3, 3, 200)
	m := w.send(t, conversation.Address{ToUser: 2}, 1)
	own := m
	own.From = 2 // the copy a device of the sender acknowledges says nothing
	w.svc.Delivered(t.Context(), tenant, 1, &m)
	w.svc.Delivered(t.Context(), tenant, 2, &m)
	w.read(t, 2, m.Topic, m.Seq)
	w.read(t, 2, m.Topic, m.Seq) // the mark did not move: nothing new to tell
	got := w.receiptsOf(t)
	want := []receipts.Receipt{
		{Topic: m.Topic, ConversationID: m.ConversationID, UserID: 2, DeliveredSeq: m.Seq},
		{Topic: m.Topic, ConversationID: m.ConversationID, UserID: 2, ReadSeq: m.Seq},
	}
	if len(got) != 1 || !slices.Equal(got[1], want) {
		t.Fatalf("receipts %+v; want %+v to user 1 only", got, want)
	}
	if w.metrics.Count("receipts_pushed_total", "read") != 1 || w.metrics.Count("receipts_pushed_total", "delivered") != 1 {
		t.Fatal("receipts_pushed_total did not count one of each")
	}
}

// TestReadStateTellsWhatWasDeliveredMeanwhile: RECEIPT is live only, so a sender who was away
// when the peer's device acknowledged learns it from READ_STATE's delivered_seq; a read counts
// as delivered, and groups have none (issue 31).
func TestReadStateTellsWhatWasDeliveredMeanwhile(t *testing.T) {
	w := newWorld(t, 3, 3, 200)
	p2p := conversation.Address{ToUser: 2}
	first, second, third := w.send(t, p2p, 1), w.send(t, p2p, 2), w.send(t, p2p, 3)
	state := func(seq int64) receipts.State {
		t.Helper()
		st, err := w.svc.ReadState(t.Context(), receipts.StateRequest{Tenant: tenant, User: 1, Address: p2p, Seq: seq})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	if got := state(first.Seq).DeliveredSeq; got != 0 {
		t.Fatalf("delivered_seq %d before any ack", got)
	}
	w.svc.Delivered(t.Context(), tenant, 2, &second)
	w.svc.Delivered(t.Context(), tenant, 2, &first) // a late ack lowers nothing
	if got := state(first.Seq).DeliveredSeq; got != second.Seq {
		t.Fatalf("delivered_seq %d, want %d", got, second.Seq)
	}
	w.read(t, 2, third.Topic, third.Seq)
	if got := state(third.Seq).DeliveredSeq; got != third.Seq {
		t.Fatalf("delivered_seq %d after a read of %d", got, third.Seq)
	}
	g := w.send(t, conversation.Address{Topic: "grp_10"}, 4)
	w.svc.Delivered(t.Context(), tenant, 2, &g)
	if st, err := w.svc.ReadState(t.Context(), receipts.StateRequest{Tenant: tenant, User: 1, Address: conversation.Address{Topic: "grp_10"}, Seq: g.Seq}); err != nil || st.DeliveredSeq != 0 {
		t.Fatalf("group read state %+v, %v: want no delivered_seq", st, err)
	}
}

// holders are the users holding a push token, of the tenant acme.
type holders map[int64]bool

func (h holders) Has(t string, user int64) bool { return t == tenant && h[user] }

// TestGroupAcksKeptOnlyForTokenHolders: a group PUSH_ACK raises the acknowledging member's
// delivered watermark, which the native push's ack wait reads (DESIGN issue-32 "Native push"),
// only when the member holds a push token; it tells no one, and costs nothing for the others
// or with the ack wait off (no holders). A P2P ack is heard either way.
func TestGroupAcksKeptOnlyForTokenHolders(t *testing.T) {
	tests := []struct {
		name    string
		holders receipts.TokenHolders
		kept    map[int64]bool // the members whose group ack is heard and kept
	}{
		{name: "ack wait off", holders: nil, kept: map[int64]bool{2: false, 3: false}},
		{name: "no holder", holders: holders{}, kept: map[int64]bool{2: false, 3: false}},
		{name: "member 2 holds a token", holders: holders{2: true}, kept: map[int64]bool{2: true, 3: false}},
		{name: "the sender holds one", holders: holders{1: true, 3: true}, kept: map[int64]bool{2: false, 3: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorldWith(t, 3, 3, 200, tt.holders)
			p := w.send(t, conversation.Address{ToUser: 2}, 1)
			g := w.send(t, conversation.Address{Topic: "grp_10"}, 1)
			if !w.svc.Hears(tenant, 2, &p) || w.svc.Hears(tenant, 1, &g) || w.svc.Hears("other", 2, &g) {
				t.Fatal("a P2P ack not heard, or the sender's own group ack, or another tenant's, heard")
			}
			for member, kept := range tt.kept {
				if got := w.svc.Hears(tenant, member, &g); got != kept {
					t.Fatalf("Hears(member %d) = %v; want %v", member, got, kept)
				}
				w.svc.Delivered(t.Context(), tenant, member, &g)
				got, err := w.marks.DeliveredTo(t.Context(), tenant, g.ConversationID, member)
				if want := map[bool]int64{false: 0, true: g.Seq}[kept]; err != nil || got != want {
					t.Fatalf("member %d: delivered watermark %d, %v; want %d", member, got, err, want)
				}
			}
			if r := w.receiptsOf(t); len(r) != 0 {
				t.Fatalf("a group ack pushed %+v", r)
			}
		})
	}
}

func TestHiddenReadsAndGroupReadsPushNothing(t *testing.T) {
	w := newWorld(t, 3, 3, 200)
	w.hide(t, 2)
	m := w.send(t, conversation.Address{ToUser: 2}, 1)
	w.read(t, 2, m.Topic, m.Seq)
	g := w.send(t, conversation.Address{Topic: "grp_10"}, 2)
	w.read(t, 3, g.Topic, g.Seq)
	w.svc.Delivered(t.Context(), tenant, 3, &g)
	w.svc.Delivered(t.Context(), tenant, 2, &m) // delivered is not hidden
	got := w.receiptsOf(t)
	if len(got) != 1 || len(got[1]) != 1 || got[1][0].DeliveredSeq != m.Seq {
		t.Fatalf("receipts %+v; want only the P2P delivered one", got)
	}
}

func TestReadStateCountsFromWatermarks(t *testing.T) {
	tests := []struct {
		name    string
		members int64
		limit   int
		hide    []int64
		want    receipts.State
	}{
		{"readers listed", 5, 10, nil, receipts.State{Topic: "grp_10", ConversationID: 100, Seq: 2, Readers: dialog.Readers{Read: 2, Of: 4, Users: []int64{2, 3}}}},
		{"a hider is counted in of only", 5, 10, []int64{3}, receipts.State{Topic: "grp_10", ConversationID: 100, Seq: 2, Readers: dialog.Readers{Read: 1, Of: 4, Users: []int64{2}}}},
		{"above the limit, counts only", 5, 3, nil, receipts.State{Topic: "grp_10", ConversationID: 100, Seq: 2, Readers: dialog.Readers{Read: 2, Of: 4, Users: []int64{}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t, tt.members, tt.members, tt.limit)
			for _, u := range tt.hide {
				w.hide(t, u)
			}
			first := w.send(t, conversation.Address{Topic: "grp_10"}, 1)
			second := w.send(t, conversation.Address{Topic: "grp_10"}, 2)
			w.read(t, 2, "grp_10", second.Seq) // read on
			w.read(t, 3, "grp_10", second.Seq)
			w.read(t, 4, "grp_10", first.Seq) // read the first only
			got, err := w.svc.ReadState(t.Context(), receipts.StateRequest{Tenant: tenant, User: 1, Address: conversation.Address{Topic: "grp_10"}, Seq: second.Seq})
			if err != nil {
				t.Fatal(err)
			}
			if got.Topic != tt.want.Topic || got.ConversationID != tt.want.ConversationID || got.Seq != tt.want.Seq ||
				got.Readers.Read != tt.want.Readers.Read || got.Readers.Of != tt.want.Readers.Of || !slices.Equal(got.Readers.Users, tt.want.Readers.Users) {
				t.Fatalf("state %+v; want %+v", got, tt.want)
			}
		})
	}
}

func TestReadStateRefusesBadInput(t *testing.T) {
	w := newWorld(t, 4, 3, 200)
	g := w.send(t, conversation.Address{Topic: "grp_10"}, 1)
	p := w.send(t, conversation.Address{ToUser: 2}, 2)
	tests := []struct {
		name string
		user int64
		addr conversation.Address
		seq  int64
		code apperr.Code
	}{
		{"unknown seq", 1, conversation.Address{Topic: "grp_10"}, g.Seq + 5, apperr.NotFound},
		{"seq not positive", 1, conversation.Address{Topic: "grp_10"}, 0, apperr.InvalidArgument},
		{"not the sender", 2, conversation.Address{Topic: "grp_10"}, g.Seq, apperr.Forbidden},
		{"not a member", 4, conversation.Address{Topic: "grp_10"}, g.Seq, apperr.Forbidden},
		{"not in the pair", 3, conversation.Address{Topic: p.Topic}, p.Seq, apperr.Forbidden},
		{"a bad topic", 1, conversation.Address{Topic: "grp_x"}, 1, apperr.InvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := w.svc.ReadState(t.Context(), receipts.StateRequest{Tenant: tenant, User: tt.user, Address: tt.addr, Seq: tt.seq})
			if code := apperr.CodeOf(err); code != tt.code {
				t.Fatalf("code %d (%v); want %d", code, err, tt.code)
			}
		})
	}
	if w.metrics.Count("read_state_queries_total") != 0 {
		t.Fatal("a refused READ_STATE counted as answered")
	}
}
