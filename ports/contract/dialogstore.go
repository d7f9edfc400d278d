package contract

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/imdhq/imd/core/domain/dialog"
	"github.com/imdhq/imd/ports"
)

// DialogFixture is a list store and one fresh tenant.
type DialogFixture struct {
	Tenant  string
	Dialogs ports.DialogStore
}

const dialogConv = 500

// DialogStore checks ports.DialogStore, the conversation lists of seed 003 §11. fresh must
// return a new tenant on every call.
func DialogStore(t *testing.T, fresh func(t *testing.T) DialogFixture) {
	cases := []struct {
		name string
		run  func(t *testing.T, f DialogFixture)
	}{
		{"recipients count, the sender does not", recipientsCount},
		{"a batch acts once per marker", batchActsOnce},
		{"many big batches act once each, whichever acted before", bigBatches},
		{"muted conversations go to read uncounted", mutedGoesToRead},
		{"a silent update re-scores where the dialog is", silentUpdate},
		{"scores never go down and previews move forward", scoresOnlyUp},
		{"applied seq follows the preview", appliedSeq},
		{"updates applied together act one after another, each once", updatesTogether},
		{"a pass of several conversations, small and big, acts per conversation", severalConversations},
		{"mark read clears the count and keeps the score", markRead},
		{"changed pages both lists by score", changedPages},
		{"rebuild merges, replace resets", rebuilds},
		{"the unread total sums every dialog", unreadTotal},
		{"pins", pins},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.run(t, fresh(t))
		})
	}
}

func dialogUpdate(once string, msgSeq, score, sender int64, batches ...dialog.Batch) dialog.Update {
	return dialog.Update{
		ConversationID: dialogConv, Score: score, Sender: sender,
		Preview: dialog.Preview{Topic: "grp_5", ConversationID: dialogConv, MsgID: 9000 + msgSeq, Seq: msgSeq, Type: "text", Text: "hi", From: sender, CreatedAt: score},
		Once:    once, OnceTTL: time.Minute, Batches: batches,
	}
}

func apply(t *testing.T, f DialogFixture, u dialog.Update) []dialog.Applied {
	t.Helper()
	got, err := f.Dialogs.Apply(context.Background(), f.Tenant, u)
	if err != nil {
		t.Fatalf("Apply %s: %v", u.Once, err)
	}
	if len(got) != len(u.Batches) {
		t.Fatalf("Apply %s: %d results for %d batches", u.Once, len(got), len(u.Batches))
	}
	return got
}

func changed(t *testing.T, f DialogFixture, user, after int64, limit int) []dialog.Entry {
	t.Helper()
	got, err := f.Dialogs.Changed(context.Background(), f.Tenant, user, after, limit)
	if err != nil {
		t.Fatalf("Changed(%d, %d, %d): %v", user, after, limit, err)
	}
	return got
}

// entryOf returns the user's entry of the test conversation.
func entryOf(t *testing.T, f DialogFixture, user int64) dialog.Entry {
	t.Helper()
	for _, e := range changed(t, f, user, 0, 1000) {
		if e.ConversationID == dialogConv {
			return e
		}
	}
	t.Fatalf("user %d has no dialog %d", user, dialogConv)
	return dialog.Entry{}
}

func recipientsCount(t *testing.T, f DialogFixture) {
	got := apply(t, f, dialogUpdate("m1", 1, 1000, 1, dialog.Batch{Index: 1, Users: []int64{1, 2}}, dialog.Batch{Index: 3, Users: []int64{3}}))
	for i, a := range got {
		if !a.First || len(a.Muted) != 0 {
			t.Fatalf("batch %d: %+v, want first and nobody muted", i, a)
		}
	}
	for _, user := range []int64{2, 3} {
		if e := entryOf(t, f, user); e.Unread != 1 || e.Score != 1000 || e.Preview.Seq != 1 || e.Preview.Text != "hi" {
			t.Fatalf("recipient %d: %+v", user, e)
		}
	}
	if e := entryOf(t, f, 1); e.Unread != 0 || e.Score != 1000 {
		t.Fatalf("sender: %+v, want score 1000 and nothing unread", e)
	}
	apply(t, f, dialogUpdate("m2", 2, 2000, 2, dialog.Batch{Index: 1, Users: []int64{1, 2}}))
	if e := entryOf(t, f, 2); e.Unread != 1 || e.Score != 2000 {
		t.Fatalf("sender with an unread dialog: %+v, want its count kept and the score moved", e)
	}
	if e := entryOf(t, f, 1); e.Unread != 1 {
		t.Fatalf("first sender receiving: %+v, want 1 unread", e)
	}
}

func batchActsOnce(t *testing.T, f DialogFixture) {
	b := dialog.Batch{Index: 7, Users: []int64{2}}
	apply(t, f, dialogUpdate("m1", 1, 1000, 1, b))
	for range 2 {
		if got := apply(t, f, dialogUpdate("m1", 1, 1000, 1, b)); got[0].First {
			t.Fatal("a repeated batch acted again")
		}
	}
	if e := entryOf(t, f, 2); e.Unread != 1 {
		t.Fatalf("after repeats: %+v, want 1 unread", e)
	}
	apply(t, f, dialogUpdate("m1", 1, 1000, 1, dialog.Batch{Index: 8, Users: []int64{3}}))
	apply(t, f, dialogUpdate("m2", 2, 2000, 1, b))
	if e := entryOf(t, f, 2); e.Unread != 2 {
		t.Fatalf("another message: %+v, want 2 unread", e)
	}
	if e := entryOf(t, f, 3); e.Unread != 1 {
		t.Fatalf("another batch of the same message: %+v, want 1 unread", e)
	}
	// One job twice in one call (a requeued copy beside the original in one deliver pass):
	// each batch acts for the first copy only.
	twice := dialogUpdate("m3", 3, 3000, 1, b, dialog.Batch{Index: 9, Users: []int64{4}})
	got, err := f.Dialogs.Apply(context.Background(), f.Tenant, twice, twice)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 || !got[0].First || !got[1].First || got[2].First || got[3].First {
		t.Fatalf("one job twice in one call: %+v, want its two batches first once", got)
	}
	if e := entryOf(t, f, 2); e.Unread != 3 {
		t.Fatalf("after one job twice in one call: %+v, want 3 unread", e)
	}
	if e := entryOf(t, f, 4); e.Unread != 1 {
		t.Fatalf("the job's other batch: %+v, want 1 unread", e)
	}
}

func bigBatches(t *testing.T, f DialogFixture) {
	// 3 × 300 users: more than a list store may change in one call, so it splits them.
	var batches []dialog.Batch
	for b := range 3 {
		users := make([]int64, 300)
		for i := range users {
			users[i] = int64(1000*(b+1) + i)
		}
		batches = append(batches, dialog.Batch{Index: 10 + b, Users: users})
	}
	// The middle batch acted in an earlier attempt.
	apply(t, f, dialogUpdate("m1", 1, 1000, 1, batches[1]))
	got := apply(t, f, dialogUpdate("m1", 1, 1000, 1, batches...))
	if !got[0].First || got[1].First || !got[2].First {
		t.Fatalf("first per batch %v, %v, %v; want true, false, true", got[0].First, got[1].First, got[2].First)
	}
	for _, again := range apply(t, f, dialogUpdate("m1", 1, 1000, 1, batches...)) {
		if again.First {
			t.Fatal("a repeated big batch acted again")
		}
	}
	for _, b := range batches {
		for _, user := range []int64{b.Users[0], b.Users[299]} {
			if e := entryOf(t, f, user); e.Unread != 1 || e.Preview.Seq != 1 {
				t.Fatalf("user %d: %+v, want 1 unread and the preview of seq 1", user, e)
			}
		}
	}
}

func mutedGoesToRead(t *testing.T, f DialogFixture) {
	ctx := context.Background()
	apply(t, f, dialogUpdate("m1", 1, 1000, 1, dialog.Batch{Index: 0, Users: []int64{2, 3}}))
	if err := f.Dialogs.SetMuted(ctx, f.Tenant, 2, dialogConv, true); err != nil {
		t.Fatal(err)
	}
	got := apply(t, f, dialogUpdate("m2", 2, 2000, 1, dialog.Batch{Index: 0, Users: []int64{2, 3}}))
	if !slices.Equal(got[0].Muted, []int64{2}) {
		t.Fatalf("muted = %v, want [2]", got[0].Muted)
	}
	if again := apply(t, f, dialogUpdate("m2", 2, 2000, 1, dialog.Batch{Index: 0, Users: []int64{2, 3}})); !slices.Equal(again[0].Muted, []int64{2}) {
		t.Fatalf("muted on a repeat = %v, want [2]", again[0].Muted)
	}
	if e := entryOf(t, f, 2); e.Unread != 1 || e.Score != 2000 || !e.Muted {
		t.Fatalf("muted user: %+v, want the old count, the new score, muted", e)
	}
	if e := entryOf(t, f, 3); e.Unread != 2 || e.Muted {
		t.Fatalf("other user: %+v, want 2 unread", e)
	}
	if err := f.Dialogs.MarkRead(ctx, f.Tenant, 2, dialogConv); err != nil {
		t.Fatal(err)
	}
	apply(t, f, dialogUpdate("m3", 3, 3000, 1, dialog.Batch{Index: 0, Users: []int64{2}}))
	if e := entryOf(t, f, 2); e.Unread != 0 || e.Score != 3000 {
		t.Fatalf("muted user after a read: %+v, want nothing counted, re-scored", e)
	}
	if err := f.Dialogs.SetMuted(ctx, f.Tenant, 2, dialogConv, false); err != nil {
		t.Fatal(err)
	}
	apply(t, f, dialogUpdate("m4", 4, 4000, 1, dialog.Batch{Index: 0, Users: []int64{2}}))
	if e := entryOf(t, f, 2); e.Unread != 1 || e.Muted {
		t.Fatalf("unmuted user: %+v, want 1 unread", e)
	}
	// A lone update's sender is no one to alert: their mute is not reported.
	if err := f.Dialogs.SetMuted(ctx, f.Tenant, 2, dialogConv, true); err != nil {
		t.Fatal(err)
	}
	if own := apply(t, f, dialogUpdate("m5", 5, 5000, 2, dialog.Batch{Index: 0, Users: []int64{2, 3}})); len(own[0].Muted) != 0 {
		t.Fatalf("muted on the sender's own message = %v, want none", own[0].Muted)
	}
	if e := entryOf(t, f, 2); e.Unread != 1 || e.Score != 5000 || !e.Muted {
		t.Fatalf("muted sender: %+v, want the count kept, re-scored, muted", e)
	}
}

func silentUpdate(t *testing.T, f DialogFixture) {
	apply(t, f, dialogUpdate("m1", 1, 1000, 1, dialog.Batch{Index: 0, Users: []int64{2, 3}}))
	if err := f.Dialogs.MarkRead(context.Background(), f.Tenant, 3, dialogConv); err != nil {
		t.Fatal(err)
	}
	u := dialogUpdate("m2", 2, 2000, 1, dialog.Batch{Index: 0, Users: []int64{2, 3, 4}})
	u.Silent = true
	apply(t, f, u)
	for user, want := range map[int64]int64{2: 1, 3: 0, 4: 0} {
		if e := entryOf(t, f, user); e.Unread != want || e.Score != 2000 {
			t.Fatalf("user %d after a silent update: %+v, want %d unread at score 2000", user, e, want)
		}
	}
}

func scoresOnlyUp(t *testing.T, f DialogFixture) {
	ctx := context.Background()
	users := dialog.Batch{Index: 0, Users: []int64{1, 2, 3, 4}}
	apply(t, f, dialogUpdate("m3", 3, 3000, 1, users))
	// 3 has read it and 4 muted it, so the late message moves their dialogs between the lists.
	if err := f.Dialogs.MarkRead(ctx, f.Tenant, 3, dialogConv); err != nil {
		t.Fatal(err)
	}
	if err := f.Dialogs.SetMuted(ctx, f.Tenant, 4, dialogConv, true); err != nil {
		t.Fatal(err)
	}
	apply(t, f, dialogUpdate("m1", 1, 1000, 1, users))
	for _, c := range []struct {
		user   int64
		unread int64
	}{{1, 0}, {2, 2}, {3, 1}, {4, 1}} {
		if e := entryOf(t, f, c.user); e.Score != 3000 || e.Unread != c.unread || e.Preview.Seq != 3 {
			t.Fatalf("user %d after a late older message: %+v, want score 3000, %d unread, preview of seq 3", c.user, e, c.unread)
		}
	}
	// 2, with unread messages, sends: a late older message of its own moves nothing, a newer
	// one moves the dialog up where it is, and neither counts for 2.
	for _, m := range []struct {
		seq, score, want int64
	}{{2, 2000, 3000}, {4, 4000, 4000}} {
		apply(t, f, dialogUpdate(fmt.Sprintf("m%d", m.seq), m.seq, m.score, 2, users))
		if e := entryOf(t, f, 2); e.Score != m.want || e.Unread != 2 {
			t.Fatalf("sender 2 after its message of score %d: %+v, want score %d, 2 unread", m.score, e, m.want)
		}
	}
	for _, user := range users.Users { // in one of the two lists, not both
		if page := changed(t, f, user, 0, 10); len(page) != 1 || page[0].ConversationID != dialogConv {
			t.Fatalf("user %d lists %+v, want the conversation once", user, page)
		}
	}
}

func appliedSeq(t *testing.T, f DialogFixture) {
	seqOf := func() int64 {
		t.Helper()
		n, err := f.Dialogs.AppliedSeq(context.Background(), f.Tenant, dialogConv)
		if err != nil {
			t.Fatalf("AppliedSeq: %v", err)
		}
		return n
	}
	if n := seqOf(); n != 0 {
		t.Fatalf("applied seq of a conversation never applied = %d; want 0", n)
	}
	steps := []struct {
		seq, want int64
	}{{3, 3}, {2, 3}, {7, 7}}
	for _, st := range steps {
		apply(t, f, dialogUpdate(fmt.Sprintf("m%d", st.seq), st.seq, 1000*st.seq, 1, dialog.Batch{Index: 0, Users: []int64{2}}))
		if n := seqOf(); n != st.want {
			t.Fatalf("after applying seq %d: applied seq %d; want %d", st.seq, n, st.want)
		}
	}
}

func updatesTogether(t *testing.T, f DialogFixture) {
	ctx := context.Background()
	if err := f.Dialogs.SetMuted(ctx, f.Tenant, 3, dialogConv, true); err != nil {
		t.Fatal(err)
	}
	users := dialog.Batch{Index: 4, Users: []int64{1, 2, 3}}
	other := dialog.Batch{Index: 9, Users: []int64{4}}
	recall := dialogUpdate("m3", 3, 3000, 1, users, other)
	recall.Silent = true
	applyAll := func(us ...dialog.Update) []dialog.Applied {
		t.Helper()
		got, err := f.Dialogs.Apply(ctx, f.Tenant, us...)
		if err != nil {
			t.Fatalf("Apply: %v", err)
		}
		if len(got) != 2*len(us) {
			t.Fatalf("Apply: %d results for %d updates of 2 batches", len(got), len(us))
		}
		return got
	}
	// From 1, from 2, then a silent event: 1 and 2 count each other's message, 3 is muted.
	run := []dialog.Update{dialogUpdate("m1", 1, 1000, 1, users, other), dialogUpdate("m2", 2, 2000, 2, users, other), recall}
	for i, a := range applyAll(run...) {
		if !a.First {
			t.Fatalf("result %d: %+v, want first", i, a)
		}
		if wantMuted := []int64{3}; i%2 == 0 && !slices.Equal(a.Muted, wantMuted) {
			t.Fatalf("result %d: muted %v, want %v", i, a.Muted, wantMuted)
		}
	}
	want := map[int64]int64{1: 1, 2: 1, 3: 0, 4: 2}
	check := func(when string) {
		t.Helper()
		for user, unread := range want {
			if e := entryOf(t, f, user); e.Unread != unread || e.Score != 3000 || e.Preview.Seq != 3 {
				t.Fatalf("%s: user %d: %+v, want %d unread, score 3000, preview of seq 3", when, user, e, unread)
			}
		}
	}
	check("after the run")
	for i, a := range applyAll(run...) {
		if a.First {
			t.Fatalf("repeat, result %d: %+v, want no batch acting again", i, a)
		}
	}
	check("after a repeat of the run")
	// A repeat and a new message together: only the new one counts.
	got := applyAll(dialogUpdate("m2", 2, 2000, 2, users, other), dialogUpdate("m4", 4, 4000, 2, users, other))
	if got[0].First || got[1].First || !got[2].First || !got[3].First {
		t.Fatalf("repeat then new: %+v, want only the new one first", got)
	}
	if e := entryOf(t, f, 1); e.Unread != 2 || e.Score != 4000 || e.Preview.Seq != 4 {
		t.Fatalf("user 1 after a new message: %+v, want 2 unread, score 4000, preview of seq 4", e)
	}
}

func severalConversations(t *testing.T, f DialogFixture) {
	ctx := context.Background()
	at := func(conv, msgSeq, score, sender int64, once string, batches ...dialog.Batch) dialog.Update {
		u := dialogUpdate(once, msgSeq, score, sender, batches...)
		u.ConversationID, u.Preview.ConversationID = conv, conv
		return u
	}
	big := make([]int64, 300) // a group too big to share a call with the others
	for i := range big {
		big[i] = int64(1000 + i)
	}
	pass := []dialog.Update{
		at(601, 1, 1000, 1, "c1", dialog.Batch{Index: 1, Users: []int64{1}}, dialog.Batch{Index: 2, Users: []int64{2}}),
		at(602, 1, 1100, 3, "c2", dialog.Batch{Index: 1, Users: []int64{1}}, dialog.Batch{Index: 3, Users: []int64{3}}),
		at(603, 7, 1200, 1, "c3", dialog.Batch{Index: 0, Users: append([]int64{1}, big...)}),
		at(601, 2, 1300, 2, "c4", dialog.Batch{Index: 1, Users: []int64{1}}, dialog.Batch{Index: 2, Users: []int64{2}}),
	}
	for round, wantFirst := range []bool{true, false} {
		got, err := f.Dialogs.Apply(ctx, f.Tenant, pass...)
		if err != nil {
			t.Fatalf("round %d: Apply: %v", round, err)
		}
		if len(got) != 7 {
			t.Fatalf("round %d: %d results for 7 batches", round, len(got))
		}
		for i, a := range got {
			if a.First != wantFirst {
				t.Fatalf("round %d, result %d: first %v, want %v", round, i, a.First, wantFirst)
			}
		}
		// conversation: unread, score, preview seq, per user
		want := map[int64]map[int64][3]int64{
			1:    {601: {1, 1300, 2}, 602: {1, 1100, 1}, 603: {0, 1200, 7}},
			2:    {601: {1, 1300, 2}},
			3:    {602: {0, 1100, 1}},
			1299: {603: {1, 1200, 7}},
		}
		for user, convs := range want {
			entries := changed(t, f, user, 0, 100)
			if len(entries) != len(convs) {
				t.Fatalf("round %d: user %d has %d dialogs, want %d: %+v", round, user, len(entries), len(convs), entries)
			}
			for _, e := range entries {
				if w := convs[e.ConversationID]; e.Unread != w[0] || e.Score != w[1] || e.Preview.Seq != w[2] {
					t.Fatalf("round %d: user %d, conversation %d: %+v, want unread %d, score %d, preview of seq %d", round, user, e.ConversationID, e, w[0], w[1], w[2])
				}
			}
		}
	}
}

func markRead(t *testing.T, f DialogFixture) {
	apply(t, f, dialogUpdate("m1", 1, 1000, 1, dialog.Batch{Index: 0, Users: []int64{2}}))
	apply(t, f, dialogUpdate("m2", 2, 2000, 1, dialog.Batch{Index: 0, Users: []int64{2}}))
	for range 2 { // reading twice is harmless
		if err := f.Dialogs.MarkRead(context.Background(), f.Tenant, 2, dialogConv); err != nil {
			t.Fatal(err)
		}
	}
	if e := entryOf(t, f, 2); e.Unread != 0 || e.Score != 2000 {
		t.Fatalf("after read: %+v, want 0 unread, score 2000", e)
	}
	if err := f.Dialogs.MarkRead(context.Background(), f.Tenant, 2, 999); err != nil {
		t.Fatalf("MarkRead of an unlisted conversation: %v", err)
	}
}

func changedPages(t *testing.T, f DialogFixture) {
	ctx := context.Background()
	// Conversations 1..6 at scores 100..600; even ones read.
	for conv := int64(1); conv <= 6; conv++ {
		u := dialogUpdate(fmt.Sprintf("c%d", conv), 1, conv*100, 1, dialog.Batch{Index: 0, Users: []int64{2}})
		u.ConversationID, u.Preview.ConversationID = conv, conv
		apply(t, f, u)
		if conv%2 == 0 {
			if err := f.Dialogs.MarkRead(ctx, f.Tenant, 2, conv); err != nil {
				t.Fatal(err)
			}
		}
	}
	ids := func(es []dialog.Entry) []int64 {
		var out []int64
		for _, e := range es {
			out = append(out, e.ConversationID)
		}
		return out
	}
	if got := ids(changed(t, f, 2, 0, 4)); !slices.Equal(got, []int64{1, 2, 3, 4}) {
		t.Fatalf("first page = %v", got)
	}
	if got := ids(changed(t, f, 2, 400, 4)); !slices.Equal(got, []int64{5, 6}) {
		t.Fatalf("page after 400 = %v", got)
	}
	if got := changed(t, f, 2, 600, 4); len(got) != 0 {
		t.Fatalf("page after the last = %v", ids(got))
	}
	if got := changed(t, f, 3, 0, 4); len(got) != 0 {
		t.Fatalf("another user's list = %v", ids(got))
	}
	page := changed(t, f, 2, 200, 2)
	if page[0].ConversationID != 3 || page[0].Unread != 1 || page[0].Preview.ConversationID != 3 || page[1].Unread != 0 {
		t.Fatalf("details = %+v", page)
	}
}

func rebuilds(t *testing.T, f DialogFixture) {
	ctx := context.Background()
	if built, err := f.Dialogs.Built(ctx, f.Tenant, 2); err != nil || built {
		t.Fatalf("Built before any rebuild = %v, %v", built, err)
	}
	// The worker counted one message of dialogConv before the rebuild.
	apply(t, f, dialogUpdate("m1", 7, 7000, 1, dialog.Batch{Index: 0, Users: []int64{2}}))
	at := func(ms int64) time.Time { return time.UnixMilli(ms) }
	states := []dialog.State{
		{ConversationID: dialogConv, Topic: "grp_5", LastSeq: 9, LastMsgID: 9009, LastMsgAt: at(9000), ReadSeq: 2},
		{ConversationID: 600, Topic: "grp_6", LastSeq: 5, LastMsgID: 6005, LastMsgAt: at(5000), ReadSeq: 2},
		{ConversationID: 700, Topic: "grp_7", LastSeq: 4, LastMsgID: 7004, LastMsgAt: at(4000), ReadSeq: 4},
		{ConversationID: 800, Topic: "grp_8", LastSeq: 8, LastMsgID: 8008, LastMsgAt: at(3000), Muted: true},
	}
	if err := f.Dialogs.Rebuild(ctx, f.Tenant, 2, states, false); err != nil {
		t.Fatal(err)
	}
	if built, err := f.Dialogs.Built(ctx, f.Tenant, 2); err != nil || !built {
		t.Fatalf("Built after a rebuild = %v, %v", built, err)
	}
	want := map[int64]dialog.Entry{
		dialogConv: {Score: 9000, Unread: 1},              // the live count wins, the score moves up
		600:        {Score: 5000, Unread: 3},              // 5 - 2
		700:        {Score: 4000, Unread: 0},              // all read
		800:        {Score: 3000, Unread: 0, Muted: true}, // muted counts nothing
	}
	check := func(when string, want map[int64]dialog.Entry) {
		t.Helper()
		got := changed(t, f, 2, 0, 100)
		if len(got) != len(want) {
			t.Fatalf("%s: %d dialogs, want %d: %+v", when, len(got), len(want), got)
		}
		for _, e := range got {
			w := want[e.ConversationID]
			if e.Score != w.Score || e.Unread != w.Unread || e.Muted != w.Muted {
				t.Fatalf("%s: dialog %d = %+v, want %+v", when, e.ConversationID, e, w)
			}
		}
	}
	check("merge", want)
	if e := entryOf(t, f, 2); e.Preview.Seq != 7 || e.Preview.Text != "hi" {
		t.Fatalf("merge replaced the stored preview: %+v", e.Preview)
	}
	if got := changed(t, f, 2, 4500, 1); got[0].ConversationID != 600 || got[0].Preview.MsgID != 6005 || got[0].Preview.Topic != "grp_6" {
		t.Fatalf("rebuilt preview = %+v", got[0])
	}
	if err := f.Dialogs.Rebuild(ctx, f.Tenant, 2, states[:2], true); err != nil {
		t.Fatal(err)
	}
	check("replace", map[int64]dialog.Entry{dialogConv: {Score: 9000, Unread: 7}, 600: {Score: 5000, Unread: 3}})
	if err := f.Dialogs.Rebuild(ctx, f.Tenant, 3, nil, false); err != nil {
		t.Fatal(err)
	}
	if built, err := f.Dialogs.Built(ctx, f.Tenant, 3); err != nil || !built {
		t.Fatalf("Built after an empty rebuild = %v, %v", built, err)
	}
}

// unreadTotal: the total is over every dialog, however many (more than a page of Changed),
// and follows a live count, a read and a rebuild.
func unreadTotal(t *testing.T, f DialogFixture) {
	ctx := context.Background()
	total := func(user int64) int64 {
		t.Helper()
		n, err := f.Dialogs.UnreadTotal(ctx, f.Tenant, user)
		if err != nil {
			t.Fatalf("UnreadTotal(%d): %v", user, err)
		}
		return n
	}
	if n := total(2); n != 0 {
		t.Fatalf("total without lists = %d, want 0", n)
	}
	// 1,200 conversations, 2 unread each, every fourth read and every fifth muted.
	var (
		states []dialog.State
		want   int64
	)
	for conv := int64(1); conv <= 1_200; conv++ {
		s := dialog.State{ConversationID: conv, Topic: fmt.Sprintf("grp_%d", conv), LastSeq: 3, LastMsgID: conv, LastMsgAt: time.UnixMilli(conv * 1000),
			ReadSeq: 1, Muted: conv%5 == 0}
		if conv%4 == 0 {
			s.ReadSeq = 3
		}
		want += s.Unread()
		states = append(states, s)
	}
	if err := f.Dialogs.Rebuild(ctx, f.Tenant, 2, states, true); err != nil {
		t.Fatal(err)
	}
	if n := total(2); n != want {
		t.Fatalf("total after the rebuild = %d, want %d", n, want)
	}
	u := dialogUpdate("m1", 1, 2_000_000, 1, dialog.Batch{Index: 0, Users: []int64{2}})
	u.ConversationID, u.Preview.ConversationID = 5_000, 5_000 // a new dialog, not muted
	apply(t, f, u)
	if n := total(2); n != want+1 {
		t.Fatalf("total after a message = %d, want %d", n, want+1)
	}
	if err := f.Dialogs.MarkRead(ctx, f.Tenant, 2, 1); err != nil {
		t.Fatal(err)
	}
	if n := total(2); n != want+1-2 {
		t.Fatalf("total after reading conversation 1 = %d, want %d", n, want+1-2)
	}
	if n := total(3); n != 0 {
		t.Fatalf("another user's total = %d, want 0", n)
	}
}

func pins(t *testing.T, f DialogFixture) {
	ctx := context.Background()
	apply(t, f, dialogUpdate("m1", 1, 1000, 1, dialog.Batch{Index: 0, Users: []int64{2}}))
	if err := f.Dialogs.SetPinned(ctx, f.Tenant, 2, dialogConv, 5000); err != nil {
		t.Fatal(err)
	}
	if e := entryOf(t, f, 2); !e.Pinned {
		t.Fatalf("after pin: %+v", e)
	}
	if err := f.Dialogs.SetPinned(ctx, f.Tenant, 2, dialogConv, 0); err != nil {
		t.Fatal(err)
	}
	if e := entryOf(t, f, 2); e.Pinned {
		t.Fatalf("after unpin: %+v", e)
	}
}
