package contract

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
	"github.com/imdhq/imd/core/domain/shard"
	"github.com/imdhq/imd/core/domain/social"
	"github.com/imdhq/imd/ports"
)

// RevisionRow is what the suite checks of one stored revision (im_message_revisions).
type RevisionRow struct {
	Month    month.Month
	MsgID    int64
	Version  int
	Editor   int64
	Action   message.Action
	Old, New json.RawMessage
}

// EditorFixture is an empty tenant with its message editor, the message and shard stores of the
// same database, and a reader of the revision rows of one message, oldest first.
type EditorFixture struct {
	Editor    ports.MessageEditor
	Store     ports.MessageStore
	Shards    ports.ShardStore
	Tenant    string
	Revisions func(t *testing.T, topic string, seq int64) []RevisionRow
}

// MessageEditor runs the message editor contract (seed 000 §7): lock, change, revision row
// with the month, all or nothing.
func MessageEditor(t *testing.T, newFixture func(t *testing.T) EditorFixture) {
	cases := []struct {
		name string
		run  func(t *testing.T, f EditorFixture)
	}{
		{"an edit is stored with its revision", editStored},
		{"recall and delete clear the content", recallAndDelete},
		{"only the mutable fields change", onlyMutableFields},
		{"a failing change writes nothing", failingChange},
		{"an unchanged message writes nothing", unchangedWritesNothing},
		{"absent messages and months", absentMessage},
		{"the message is changed in its own month", ownMonth},
		{"concurrent changes serialize on the row", concurrentChanges},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.run(t, newFixture(t)) })
	}
}

var changedAt = time.Date(2030, 1, 20, 8, 30, 0, 123_000_000, time.UTC)

// edit returns a change that sets the content and bumps the version.
func edit(editor int64, content string) func(message.Message) (message.Revision, error) {
	return func(cur message.Message) (message.Revision, error) {
		next := cur
		next.Content = json.RawMessage(content)
		next.Version++
		next.EditedAt = changedAt
		return message.Revision{Action: message.ActionEdit, Editor: editor, At: changedAt, Message: next}, nil
	}
}

func modify(t *testing.T, f EditorFixture, m month.Month, topicName string, seq int64, change func(message.Message) (message.Revision, error)) message.Message {
	t.Helper()
	got, err := f.Editor.Modify(context.Background(), f.Tenant, m, topicName, seq, change)
	if err != nil {
		t.Fatalf("Modify %s seq %d: %v", topicName, seq, err)
	}
	return got
}

func get(t *testing.T, s ports.MessageStore, tenant string, m month.Month, topicName string, seq int64) message.Message {
	t.Helper()
	got, err := s.Get(context.Background(), tenant, m, topicName, seq)
	if err != nil {
		t.Fatalf("Get %s seq %d: %v", topicName, seq, err)
	}
	return got
}

func wantRevisions(t *testing.T, got []RevisionRow, want ...RevisionRow) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("revisions = %+v, want %+v", got, want)
	}
	for i := range got {
		g, w := got[i], want[i]
		if !sameJSON(g.Old, w.Old) || !sameJSON(g.New, w.New) {
			t.Fatalf("revision %d content %s → %s, want %s → %s", i, g.Old, g.New, w.Old, w.New)
		}
		g.Old, g.New, w.Old, w.New = nil, nil, nil, nil
		if fmt.Sprintf("%+v", g) != fmt.Sprintf("%+v", w) {
			t.Fatalf("revision %d = %+v, want %+v", i, g, w)
		}
	}
}

func editStored(t *testing.T, f EditorFixture) {
	writable(t, f.Shards, f.Tenant, monthA)
	m := newMessage("grp_1", 1, 1001, monthA)
	mustAppend(t, f.Store, f.Tenant, m, ports.Stored)

	got := modify(t, f, monthA, "grp_1", 1, edit(7, `{"text":"fixed"}`))
	want := m
	want.Content, want.Version, want.EditedAt = json.RawMessage(`{"text":"fixed"}`), 2, changedAt
	sameMessage(t, got, want)
	sameMessage(t, get(t, f.Store, f.Tenant, monthA, "grp_1", 1), want)

	modify(t, f, monthA, "grp_1", 1, edit(7, `{"text":"fixed again"}`))
	wantRevisions(t, f.Revisions(t, "grp_1", 1),
		RevisionRow{Month: monthA, MsgID: 1001, Version: 2, Editor: 7, Action: message.ActionEdit, Old: m.Content, New: json.RawMessage(`{"text":"fixed"}`)},
		RevisionRow{Month: monthA, MsgID: 1001, Version: 3, Editor: 7, Action: message.ActionEdit, Old: json.RawMessage(`{"text":"fixed"}`), New: json.RawMessage(`{"text":"fixed again"}`)},
	)
}

func recallAndDelete(t *testing.T, f EditorFixture) {
	writable(t, f.Shards, f.Tenant, monthA)
	for i := int64(1); i <= 3; i++ {
		mustAppend(t, f.Store, f.Tenant, newMessage("grp_1", i, 1000+i, monthA), ports.Stored)
	}
	to := func(action message.Action, status message.Status) func(message.Message) (message.Revision, error) {
		return func(cur message.Message) (message.Revision, error) {
			next := cur
			next.Status, next.Content, next.Version = status, nil, cur.Version+1
			return message.Revision{Action: action, Editor: 7, At: changedAt, Message: next}, nil
		}
	}
	recalled := modify(t, f, monthA, "grp_1", 1, to(message.ActionRecall, message.StatusRecalled))
	deleted := modify(t, f, monthA, "grp_1", 2, to(message.ActionDelete, message.StatusDeleted))
	for _, m := range []message.Message{recalled, get(t, f.Store, f.Tenant, monthA, "grp_1", 1)} {
		if m.Status != message.StatusRecalled || len(m.Content) != 0 || m.Version != 2 {
			t.Fatalf("recalled message = %+v", m)
		}
	}
	if deleted.Status != message.StatusDeleted || len(deleted.Content) != 0 || deleted.Version != 2 {
		t.Fatalf("deleted message = %+v", deleted)
	}
	// A recalled message stays in pages (clients show "recalled"); a deleted one is a tombstone.
	wantSeqs(t, page(t, f.Store, f.Tenant, monthA, message.PageQuery{Topic: "grp_1", Limit: 10}), 1, 3)
	wantSeqs(t, page(t, f.Store, f.Tenant, monthA, message.PageQuery{Topic: "grp_1", Limit: 10, IncludeDeleted: true}), 1, 2, 3)
	old := newMessage("grp_1", 1, 1001, monthA).Content
	wantRevisions(t, f.Revisions(t, "grp_1", 1),
		RevisionRow{Month: monthA, MsgID: 1001, Version: 2, Editor: 7, Action: message.ActionRecall, Old: old})
	wantRevisions(t, f.Revisions(t, "grp_1", 2),
		RevisionRow{Month: monthA, MsgID: 1002, Version: 2, Editor: 7, Action: message.ActionDelete, Old: newMessage("grp_1", 2, 1002, monthA).Content})
}

func onlyMutableFields(t *testing.T, f EditorFixture) {
	writable(t, f.Shards, f.Tenant, monthA)
	m := newMessage("grp_1", 1, 1001, monthA)
	mustAppend(t, f.Store, f.Tenant, m, ports.Stored)
	got := modify(t, f, monthA, "grp_1", 1, func(cur message.Message) (message.Revision, error) {
		next := cur
		next.Version++
		next.From, next.Type, next.ClientMsgID, next.MsgID, next.CreatedAt = 99, "image", "forged", 5, changedAt
		return message.Revision{Action: message.ActionEdit, Editor: 7, At: changedAt, Message: next}, nil
	})
	want := m
	want.Version = 2
	sameMessage(t, got, want)
	sameMessage(t, get(t, f.Store, f.Tenant, monthA, "grp_1", 1), want)
}

func failingChange(t *testing.T, f EditorFixture) {
	writable(t, f.Shards, f.Tenant, monthA)
	m := newMessage("grp_1", 1, 1001, monthA)
	mustAppend(t, f.Store, f.Tenant, m, ports.Stored)
	refused := errors.New("refused")
	_, err := f.Editor.Modify(context.Background(), f.Tenant, monthA, "grp_1", 1, func(message.Message) (message.Revision, error) {
		return message.Revision{}, refused
	})
	if !errors.Is(err, refused) {
		t.Fatalf("Modify: err = %v, want the change's error", err)
	}
	sameMessage(t, get(t, f.Store, f.Tenant, monthA, "grp_1", 1), m)
	wantRevisions(t, f.Revisions(t, "grp_1", 1))
}

func unchangedWritesNothing(t *testing.T, f EditorFixture) {
	writable(t, f.Shards, f.Tenant, monthA)
	m := newMessage("grp_1", 1, 1001, monthA)
	mustAppend(t, f.Store, f.Tenant, m, ports.Stored)
	var seen message.Message
	got := modify(t, f, monthA, "grp_1", 1, func(cur message.Message) (message.Revision, error) {
		seen = cur
		return message.Revision{}, message.ErrUnchanged
	})
	sameMessage(t, seen, m)
	sameMessage(t, got, m)
	sameMessage(t, get(t, f.Store, f.Tenant, monthA, "grp_1", 1), m)
	wantRevisions(t, f.Revisions(t, "grp_1", 1))
}

func absentMessage(t *testing.T, f EditorFixture) {
	ctx := context.Background()
	called := false
	never := func(message.Message) (message.Revision, error) { called = true; return message.Revision{}, nil }
	if _, err := f.Editor.Modify(ctx, f.Tenant, monthA, "grp_1", 1, never); !errors.Is(err, shard.ErrMonthMissing) {
		t.Fatalf("Modify in an unregistered month: err = %v, want shard.ErrMonthMissing", err)
	}
	writable(t, f.Shards, f.Tenant, monthA)
	if _, err := f.Editor.Modify(ctx, f.Tenant, monthA, "grp_1", 1, never); !errors.Is(err, message.ErrNotFound) {
		t.Fatalf("Modify of an absent message: err = %v, want message.ErrNotFound", err)
	}
	if _, err := f.Editor.Modify(ctx, f.Tenant, month.Month(203013), "grp_1", 1, never); err == nil {
		t.Fatal("Modify in an invalid month succeeded")
	}
	if called {
		t.Fatal("change was called without a message")
	}
}

func ownMonth(t *testing.T, f EditorFixture) {
	ctx := context.Background()
	writable(t, f.Shards, f.Tenant, monthA)
	writable(t, f.Shards, f.Tenant, monthB)
	mustAppend(t, f.Store, f.Tenant, newMessage("grp_1", 1, 1001, monthA), ports.Stored)
	mustAppend(t, f.Store, f.Tenant, newMessage("grp_1", 2, 1002, monthB), ports.Stored)
	if _, err := f.Editor.Modify(ctx, f.Tenant, monthB, "grp_1", 1, edit(7, `{"text":"x"}`)); !errors.Is(err, message.ErrNotFound) {
		t.Fatalf("Modify of seq 1 in the wrong month: err = %v, want message.ErrNotFound", err)
	}
	modify(t, f, monthA, "grp_1", 1, edit(7, `{"text":"x"}`))
	wantRevisions(t, f.Revisions(t, "grp_1", 1), RevisionRow{
		Month: monthA, MsgID: 1001, Version: 2, Editor: 7, Action: message.ActionEdit,
		Old: newMessage("grp_1", 1, 1001, monthA).Content, New: json.RawMessage(`{"text":"x"}`),
	})
	if got := get(t, f.Store, f.Tenant, monthB, "grp_1", 2); got.Version != 1 {
		t.Fatalf("the other month's message changed: %+v", got)
	}
}

// concurrentChanges proves the row lock: each change reads the version and writes it plus one,
// so a lost update would leave the final version short.
func concurrentChanges(t *testing.T, f EditorFixture) {
	writable(t, f.Shards, f.Tenant, monthA)
	mustAppend(t, f.Store, f.Tenant, newMessage("grp_1", 1, 1001, monthA), ports.Stored)
	const n = 16
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			_, err := f.Editor.Modify(context.Background(), f.Tenant, monthA, "grp_1", 1, edit(int64(i+1), fmt.Sprintf(`{"text":"v%d"}`, i)))
			if err != nil {
				t.Errorf("Modify %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	if got := get(t, f.Store, f.Tenant, monthA, "grp_1", 1); got.Version != 1+n {
		t.Fatalf("version = %d after %d changes, want %d", got.Version, n, 1+n)
	}
	revs := f.Revisions(t, "grp_1", 1)
	if len(revs) != n {
		t.Fatalf("%d revisions, want %d", len(revs), n)
	}
	for i, r := range revs {
		if r.Version != i+2 {
			t.Fatalf("revision %d has version %d, want %d", i, r.Version, i+2)
		}
		if i > 0 && !sameJSON(r.Old, revs[i-1].New) {
			t.Fatalf("revision %d starts from %s, the previous one ended at %s", i, r.Old, revs[i-1].New)
		}
	}
}

// DeleteLogFactory returns an empty tenant: its delete log and the message and shard stores of
// the same database.
type DeleteLogFactory func(t *testing.T) (log ports.DeleteLog, store ports.MessageStore, shards ports.ShardStore, tenant string)

// DeleteLog runs the delete log contract: MessageStore.Page hides a viewer's ranges [low, hi)
// in every month and from nobody else (seed 000 §6.2).
func DeleteLog(t *testing.T, newLog DeleteLogFactory) {
	cases := []struct {
		name string
		run  func(t *testing.T, l ports.DeleteLog, s ports.MessageStore, shards ports.ShardStore, tenant string)
	}{
		{"a range is hidden from its user only", rangeForItsUser},
		{"ranges apply in every month", rangesAcrossMonths},
		{"overlapping ranges", overlappingRanges},
		{"invalid ranges are refused", invalidRanges},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l, s, shards, tenant := newLog(t)
			c.run(t, l, s, shards, tenant)
		})
	}
}

func hide(t *testing.T, l ports.DeleteLog, tenant, topicName string, user, low, hi int64) {
	t.Helper()
	if err := l.HideRange(context.Background(), tenant, topicName, user, low, hi); err != nil {
		t.Fatalf("HideRange %s [%d, %d) for %d: %v", topicName, low, hi, user, err)
	}
}

func rangeForItsUser(t *testing.T, l ports.DeleteLog, s ports.MessageStore, shards ports.ShardStore, tenant string) {
	writable(t, shards, tenant, monthA)
	for i := int64(1); i <= 8; i++ {
		mustAppend(t, s, tenant, newMessage("grp_1", i, 1000+i, monthA), ports.Stored)
	}
	mustAppend(t, s, tenant, newMessage("grp_2", 1, 2001, monthA), ports.Stored)
	hide(t, l, tenant, "grp_1", 5, 3, 6)
	cases := []struct {
		name string
		q    message.PageQuery
		want []int64
	}{
		{"the user, ascending", message.PageQuery{Topic: "grp_1", Viewer: 5, Limit: 10}, []int64{1, 2, 6, 7, 8}},
		{"the user, descending", message.PageQuery{Topic: "grp_1", Viewer: 5, Limit: 3, Desc: true, Before: 7}, []int64{6, 2, 1}},
		{"the user, with tombstones", message.PageQuery{Topic: "grp_1", Viewer: 5, Limit: 10, IncludeDeleted: true}, []int64{1, 2, 6, 7, 8}},
		{"the user, a limit across the range", message.PageQuery{Topic: "grp_1", Viewer: 5, After: 1, Limit: 2}, []int64{2, 6}},
		{"another user", message.PageQuery{Topic: "grp_1", Viewer: 6, Limit: 10}, []int64{1, 2, 3, 4, 5, 6, 7, 8}},
		{"no viewer (an operator)", message.PageQuery{Topic: "grp_1", Limit: 10}, []int64{1, 2, 3, 4, 5, 6, 7, 8}},
		{"the user, another topic", message.PageQuery{Topic: "grp_2", Viewer: 5, Limit: 10}, []int64{1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { wantSeqs(t, page(t, s, tenant, monthA, c.q), c.want...) })
	}
}

func rangesAcrossMonths(t *testing.T, l ports.DeleteLog, s ports.MessageStore, shards ports.ShardStore, tenant string) {
	writable(t, shards, tenant, monthA)
	writable(t, shards, tenant, monthB)
	for i := int64(1); i <= 5; i++ {
		mustAppend(t, s, tenant, newMessage("grp_1", i, 1000+i, monthA), ports.Stored)
	}
	for i := int64(6); i <= 10; i++ {
		mustAppend(t, s, tenant, newMessage("grp_1", i, 1000+i, monthB), ports.Stored)
	}
	hide(t, l, tenant, "grp_1", 5, 4, 8)
	wantSeqs(t, page(t, s, tenant, monthA, message.PageQuery{Topic: "grp_1", Viewer: 5, Limit: 10}), 1, 2, 3)
	wantSeqs(t, page(t, s, tenant, monthB, message.PageQuery{Topic: "grp_1", Viewer: 5, Limit: 10}), 8, 9, 10)
}

func overlappingRanges(t *testing.T, l ports.DeleteLog, s ports.MessageStore, shards ports.ShardStore, tenant string) {
	writable(t, shards, tenant, monthA)
	for i := int64(1); i <= 10; i++ {
		mustAppend(t, s, tenant, newMessage("grp_1", i, 1000+i, monthA), ports.Stored)
	}
	hide(t, l, tenant, "grp_1", 5, 2, 5)
	hide(t, l, tenant, "grp_1", 5, 4, 7)
	hide(t, l, tenant, "grp_1", 5, 4, 7) // a retry
	hide(t, l, tenant, "grp_1", 5, 9, 10)
	wantSeqs(t, page(t, s, tenant, monthA, message.PageQuery{Topic: "grp_1", Viewer: 5, Limit: 10}), 1, 7, 8, 10)
}

func invalidRanges(t *testing.T, l ports.DeleteLog, s ports.MessageStore, shards ports.ShardStore, tenant string) {
	writable(t, shards, tenant, monthA)
	for i := int64(1); i <= 3; i++ {
		mustAppend(t, s, tenant, newMessage("grp_1", i, 1000+i, monthA), ports.Stored)
	}
	for _, r := range [][3]int64{{5, 0, 2}, {5, 2, 2}, {5, 3, 1}, {0, 1, 2}} {
		if err := l.HideRange(context.Background(), tenant, "grp_1", r[0], r[1], r[2]); err == nil {
			t.Fatalf("HideRange [%d, %d) for %d succeeded", r[1], r[2], r[0])
		}
	}
	wantSeqs(t, page(t, s, tenant, monthA, message.PageQuery{Topic: "grp_1", Viewer: 5, Limit: 10}), 1, 2, 3)
}

// GroupOwnersFactory returns an empty tenant: its owner lookup and the directory of the same
// database.
type GroupOwnersFactory func(t *testing.T) (owners ports.GroupOwners, dir ports.Directory, tenant string)

// GroupOwners runs the owner lookup contract.
func GroupOwners(t *testing.T, newOwners GroupOwnersFactory) {
	ctx := context.Background()
	owners, dir, tenant := newOwners(t)
	for _, u := range []int64{1, 2} {
		if err := dir.CreateUser(ctx, tenant, social.User{ID: u}); err != nil {
			t.Fatalf("CreateUser: %v", err)
		}
	}
	if _, err := dir.CreateGroup(ctx, tenant, social.Group{ID: 10, Owner: 2}, 5000, []int64{1}, 0); err != nil {
		t.Fatalf("CreateGroup: %v", err)
	}
	if owner, err := owners.GroupOwner(ctx, tenant, 10); err != nil || owner != 2 {
		t.Fatalf("GroupOwner = %d, %v; want 2", owner, err)
	}
	if _, err := owners.GroupOwner(ctx, tenant, 11); !errors.Is(err, social.ErrNotFound) {
		t.Fatalf("GroupOwner of an unknown group: err = %v, want social.ErrNotFound", err)
	}
}
