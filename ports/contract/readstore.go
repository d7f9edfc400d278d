package contract

import (
	"cmp"
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"testing"

	"github.com/imdhq/imd/core/domain/dialog"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/shard"
	"github.com/imdhq/imd/core/domain/social"
	"github.com/imdhq/imd/ports"
)

// ReadFixture is a read-state store and the stores of the same fresh tenant it reads from.
type ReadFixture struct {
	Tenant    string
	Reads     ports.ReadStore
	Finder    ports.MessageFinder
	Directory ports.Directory
	Store     ports.MessageStore
	Shards    ports.ShardStore
	Receipts  ports.ReadReceipts // reads Reads' watermarks and Settings' hide_receipts
	Settings  ports.UserSettings
}

// ReadStore checks ports.ReadStore and ports.MessageFinder (seed 003 §10.2, §14): states follow
// the stored messages and members, watermarks never move back, messages are found by msg_id in
// their month. fresh must return a new tenant on every call.
func ReadStore(t *testing.T, fresh func(t *testing.T) ReadFixture) {
	cases := []struct {
		name string
		run  func(t *testing.T, f ReadFixture)
	}{
		{"states follow members and stored messages", readStates},
		{"the watermark never moves back", readWatermark},
		{"concurrent reads settle on the highest", readConcurrent},
		{"mute flags", readMuted},
		{"find by msg_id in a month", findByID},
		{"readers come from the watermarks", readReaders},
		{"the delivered watermark only rises", readDelivered},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.run(t, fresh(t))
		})
	}
}

// readGroup creates users 1-3 and group 5 (conversation 500) of users 1 and 2 with n messages
// from user 1 in monthA, and returns them.
func readGroup(t *testing.T, f ReadFixture, n int) []message.Message {
	t.Helper()
	ctx := context.Background()
	for u := int64(1); u <= 3; u++ {
		if err := f.Directory.CreateUser(ctx, f.Tenant, social.User{ID: u}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.Directory.CreateGroup(ctx, f.Tenant, social.Group{ID: 5, Owner: 1}, 500, []int64{2}, 0); err != nil {
		t.Fatal(err)
	}
	writable(t, f.Shards, f.Tenant, monthA)
	var msgs []message.Message
	for sq := int64(1); sq <= int64(n); sq++ {
		m := newMessage("grp_5", sq, 5000+sq, monthA)
		m.GroupID, m.ConversationID, m.From = 5, 500, 1
		mustAppend(t, f.Store, f.Tenant, m, ports.Stored)
		msgs = append(msgs, m)
	}
	return msgs
}

func mustAdvance(t *testing.T, f ReadFixture, user, seq, msgID int64, wantSeq int64, wantAdvanced bool) {
	t.Helper()
	w, advanced, err := f.Reads.Advance(context.Background(), f.Tenant, user, 500, seq, msgID)
	if err != nil {
		t.Fatalf("Advance to %d: %v", seq, err)
	}
	if w.Seq != wantSeq || advanced != wantAdvanced || w.ConversationID != 500 {
		t.Fatalf("Advance to %d = %+v, %v; want seq %d, advanced %v", seq, w, advanced, wantSeq, wantAdvanced)
	}
}

func readStates(t *testing.T, f ReadFixture) {
	ctx := context.Background()
	msgs := readGroup(t, f, 3)
	if _, err := f.Directory.CreateGroup(ctx, f.Tenant, social.Group{ID: 6, Owner: 2}, 600, nil, 0); err != nil {
		t.Fatal(err)
	}
	all, err := f.Reads.AllStates(ctx, f.Tenant, 2)
	if err != nil {
		t.Fatal(err)
	}
	last := msgs[2]
	want := dialog.State{ConversationID: 500, Topic: "grp_5", LastSeq: 3, LastMsgID: last.MsgID, LastMsgAt: last.CreatedAt}
	if len(all) != 1 || !sameState(all[0], want) {
		t.Fatalf("AllStates = %+v, want only %+v (a conversation without messages is left out)", all, want)
	}
	some, err := f.Reads.States(ctx, f.Tenant, 2, []int64{600, 500, 999})
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(some, func(a, b dialog.State) int { return cmp.Compare(a.ConversationID, b.ConversationID) })
	if len(some) != 2 || !sameState(some[0], want) || some[1].ConversationID != 600 || some[1].LastSeq != 0 || some[1].Topic != "grp_6" {
		t.Fatalf("States = %+v", some)
	}
	if none, err := f.Reads.AllStates(ctx, f.Tenant, 3); err != nil || len(none) != 0 {
		t.Fatalf("a non-member's states = %+v, %v", none, err)
	}
	if none, err := f.Reads.States(ctx, f.Tenant, 3, []int64{500}); err != nil || len(none) != 0 {
		t.Fatalf("a non-member's state = %+v, %v", none, err)
	}
}

func sameState(got, want dialog.State) bool {
	return got.ConversationID == want.ConversationID && got.Topic == want.Topic && got.LastSeq == want.LastSeq &&
		got.LastMsgID == want.LastMsgID && got.LastMsgAt.Equal(want.LastMsgAt) && got.ReadSeq == want.ReadSeq &&
		got.ReadMsgID == want.ReadMsgID && got.Muted == want.Muted
}

func readWatermark(t *testing.T, f ReadFixture) {
	msgs := readGroup(t, f, 3)
	if _, _, err := f.Reads.Advance(context.Background(), f.Tenant, 3, 500, 1, msgs[0].MsgID); !errors.Is(err, social.ErrNotFound) {
		t.Fatalf("Advance of a non-member: %v, want social.ErrNotFound", err)
	}
	mustAdvance(t, f, 2, 2, msgs[1].MsgID, 2, true)
	mustAdvance(t, f, 2, 1, msgs[0].MsgID, 2, false)
	mustAdvance(t, f, 2, 2, msgs[1].MsgID, 2, false)
	mustAdvance(t, f, 2, 3, msgs[2].MsgID, 3, true)
	states, err := f.Reads.States(context.Background(), f.Tenant, 2, []int64{500})
	if err != nil || len(states) != 1 || states[0].ReadSeq != 3 || states[0].ReadMsgID != msgs[2].MsgID {
		t.Fatalf("state after reads = %+v, %v", states, err)
	}
	if other, err := f.Reads.States(context.Background(), f.Tenant, 1, []int64{500}); err != nil || other[0].ReadSeq != 0 {
		t.Fatalf("another member's state = %+v, %v", other, err)
	}
}

func readConcurrent(t *testing.T, f ReadFixture) {
	msgs := readGroup(t, f, 10)
	var wg sync.WaitGroup
	for _, m := range msgs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, _, err := f.Reads.Advance(context.Background(), f.Tenant, 2, 500, m.Seq, m.MsgID); err != nil {
				t.Errorf("Advance to %d: %v", m.Seq, err)
			}
		}()
	}
	wg.Wait()
	mustAdvance(t, f, 2, 1, msgs[0].MsgID, 10, false)
}

func readMuted(t *testing.T, f ReadFixture) {
	ctx := context.Background()
	readGroup(t, f, 1)
	if err := f.Reads.SetMuted(ctx, f.Tenant, 3, 500, true); !errors.Is(err, social.ErrNotFound) {
		t.Fatalf("SetMuted of a non-member: %v, want social.ErrNotFound", err)
	}
	for _, muted := range []bool{true, true, false} {
		if err := f.Reads.SetMuted(ctx, f.Tenant, 2, 500, muted); err != nil {
			t.Fatal(err)
		}
		states, err := f.Reads.AllStates(ctx, f.Tenant, 2)
		if err != nil || len(states) != 1 || states[0].Muted != muted {
			t.Fatalf("after SetMuted(%v): %+v, %v", muted, states, err)
		}
	}
}

func findByID(t *testing.T, f ReadFixture) {
	ctx := context.Background()
	msgs := readGroup(t, f, 2)
	got, err := f.Finder.FindByID(ctx, f.Tenant, monthA, msgs[1].MsgID)
	if err != nil {
		t.Fatal(err)
	}
	sameMessage(t, got, msgs[1])
	if _, err := f.Finder.FindByID(ctx, f.Tenant, monthA, 99); !errors.Is(err, message.ErrNotFound) {
		t.Fatalf("unknown msg_id: %v, want message.ErrNotFound", err)
	}
	writable(t, f.Shards, f.Tenant, monthB)
	if _, err := f.Finder.FindByID(ctx, f.Tenant, monthB, msgs[1].MsgID); !errors.Is(err, message.ErrNotFound) {
		t.Fatalf("another month: %v, want message.ErrNotFound", err)
	}
	if _, err := f.Finder.FindByID(ctx, f.Tenant, month.Month(203112), msgs[1].MsgID); !errors.Is(err, shard.ErrMonthMissing) {
		t.Fatalf("a month without a table: %v, want shard.ErrMonthMissing", err)
	}
}

// readReaders checks ports.ReadReceipts: group 5 of users 1 (the sender), 2 and 3; a reader
// counts once its watermark reaches the seq, a member who hides receipts never, the sender
// never, and the list stops at limit.
func readReaders(t *testing.T, f ReadFixture) {
	ctx := context.Background()
	msgs := readGroup(t, f, 3)
	if err := f.Directory.AddMembers(ctx, f.Tenant, "grp_5", []int64{3}, 0); err != nil {
		t.Fatal(err)
	}
	mustAdvance(t, f, 2, 2, msgs[1].MsgID, 2, true)
	mustAdvance(t, f, 3, 3, msgs[2].MsgID, 3, true)
	mustAdvance(t, f, 1, 3, msgs[2].MsgID, 3, true)
	check := func(seq int64, limit int, want dialog.Readers) {
		t.Helper()
		got, err := f.Receipts.ReadBy(ctx, f.Tenant, 500, seq, 1, limit)
		if err != nil {
			t.Fatalf("ReadBy(%d): %v", seq, err)
		}
		if got.Read != want.Read || got.Of != want.Of || !slices.Equal(got.Users, want.Users) {
			t.Fatalf("ReadBy(seq %d, limit %d) = %+v; want %+v", seq, limit, got, want)
		}
	}
	check(1, 10, dialog.Readers{Read: 2, Of: 2, Users: []int64{2, 3}})
	check(1, 1, dialog.Readers{Read: 2, Of: 2, Users: []int64{2}})
	check(1, 0, dialog.Readers{Read: 2, Of: 2, Users: []int64{}})
	check(3, 10, dialog.Readers{Read: 1, Of: 2, Users: []int64{3}})
	hide := true
	if _, err := f.Settings.ChangeSettings(ctx, f.Tenant, 3, social.SettingsChange{HideReceipts: &hide}); err != nil {
		t.Fatal(err)
	}
	check(1, 10, dialog.Readers{Read: 1, Of: 2, Users: []int64{2}})
	check(3, 10, dialog.Readers{Read: 0, Of: 2, Users: []int64{}})
}

// readDelivered checks the delivered watermark of ports.ReadReceipts: it only rises, a read
// past it counts as delivered, and a user who is no member has none.
func readDelivered(t *testing.T, f ReadFixture) {
	ctx := context.Background()
	msgs := readGroup(t, f, 4)
	check := func(user, want int64) {
		t.Helper()
		got, err := f.Receipts.DeliveredTo(ctx, f.Tenant, 500, user)
		if err != nil || got != want {
			t.Fatalf("DeliveredTo(user %d) = %d, %v; want %d", user, got, err, want)
		}
	}
	check(2, 0)
	for _, step := range []struct{ seq, want int64 }{{2, 2}, {1, 2}, {3, 3}} {
		if err := f.Receipts.RaiseDelivered(ctx, f.Tenant, 500, 2, step.seq); err != nil {
			t.Fatal(err)
		}
		check(2, step.want)
	}
	mustAdvance(t, f, 2, 4, msgs[3].MsgID, 4, true)
	check(2, 4)
	if err := f.Receipts.RaiseDelivered(ctx, f.Tenant, 500, 99, 3); err != nil {
		t.Fatal(err)
	}
	check(99, 0)
	// Several at once: a member with no mark (the owner, 1) has 0, users who are no member
	// are left out.
	got, err := f.Receipts.DeliveredToUsers(ctx, f.Tenant, 500, []int64{1, 2, 3, 99})
	if want := map[int64]int64{1: 0, 2: 4}; err != nil || !maps.Equal(got, want) {
		t.Fatalf("DeliveredToUsers = %v, %v; want %v", got, err, want)
	}
	if got, err := f.Receipts.DeliveredToUsers(ctx, f.Tenant, 500, nil); err != nil || len(got) != 0 {
		t.Fatalf("DeliveredToUsers(none) = %v, %v; want none", got, err)
	}
}
