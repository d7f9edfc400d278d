// Package contract holds one test suite per port. Each adapter's tests run the suite of the
// ports it implements, and so do the in-memory fakes, so a fake behaves like the real thing
// (DESIGN §2).
package contract

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/route"
	"github.com/imdhq/imd/core/domain/seq"
	"github.com/imdhq/imd/core/domain/shard"
	"github.com/imdhq/imd/ports"
)

// MessageStoreFactory returns an empty tenant: its message store and the shard store of the
// same database.
type MessageStoreFactory func(t *testing.T) (store ports.MessageStore, shards ports.ShardStore, tenant string)

// Months the suites write to; far from now, so no clock matters.
var (
	monthA = month.Month(203001)
	monthB = month.Month(203002)
)

// MessageStore runs the message store contract (seed 000 §3, §5; DESIGN §4 step 5).
func MessageStore(t *testing.T, newStore MessageStoreFactory) {
	cases := []struct {
		name string
		run  func(t *testing.T, s ports.MessageStore, shards ports.ShardStore, tenant string)
	}{
		{"append then get", appendThenGet},
		{"retry with the same msg_id is already stored", retrySameMsgID},
		{"reused client_msg_id closes its seq with a tombstone", reusedClientMsgID},
		{"taken seq fails with ErrTaken and writes nothing", takenSeq},
		{"month missing from the catalog", monthMissing},
		{"month states that take writes", monthStates},
		{"pages in both directions within bounds", paging},
		{"segments and max seq across two months", segmentsAcrossMonths},
		{"overlap with another month is ErrTaken", overlapAcrossMonths},
		{"a seq out of month order is ErrTaken", outOfMonthOrder},
		{"concurrent appends all commit", concurrentAppends},
		{"concurrent retries of one message store it once", concurrentRetries},
		{"a queued mark answers every later resend", queuedMark},
		{"a fresh allocation behind the newest writable month is refused", freshBehindNewestWritable},
		{"a stored fresh allocation records its month active", freshRecordsItsMonthActive},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, shards, tenant := newStore(t)
			c.run(t, s, shards, tenant)
		})
	}
}

func appendThenGet(t *testing.T, s ports.MessageStore, shards ports.ShardStore, tenant string) {
	ctx := context.Background()
	writable(t, shards, tenant, monthA)
	m := newMessage("grp_1", 1, 1001, monthA)
	m.Mentions = []int64{7, 9}
	m.ReplySeq = 1
	m.MentionAll = true
	mustAppend(t, s, tenant, m, ports.Stored)

	got, err := s.Get(ctx, tenant, monthA, "grp_1", 1)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	sameMessage(t, got, m)

	if _, err := s.Get(ctx, tenant, monthA, "grp_1", 2); !errors.Is(err, message.ErrNotFound) {
		t.Fatalf("Get of an absent seq: err = %v, want message.ErrNotFound", err)
	}
	if _, err := s.Get(ctx, tenant, monthA, "grp_2", 1); !errors.Is(err, message.ErrNotFound) {
		t.Fatalf("Get of another topic: err = %v, want message.ErrNotFound", err)
	}
}

func retrySameMsgID(t *testing.T, s ports.MessageStore, shards ports.ShardStore, tenant string) {
	writable(t, shards, tenant, monthA)
	m := newMessage("grp_1", 1, 1001, monthA)
	mustAppend(t, s, tenant, m, ports.Stored)

	res := mustAppend(t, s, tenant, m, ports.AlreadyStored)
	sameMessage(t, res.Existing, m)
	if res.Hash != hashOf(m) {
		t.Fatalf("Hash = %q, want %q", res.Hash, hashOf(m))
	}
	wantRoute(t, s, tenant, "grp_1", segment{monthA, 1, 1, 1})
}

func reusedClientMsgID(t *testing.T, s ports.MessageStore, shards ports.ShardStore, tenant string) {
	ctx := context.Background()
	writable(t, shards, tenant, monthA)
	first := newMessage("grp_1", 1, 1001, monthA)
	mustAppend(t, s, tenant, first, ports.Stored)

	second := newMessage("grp_1", 2, 1002, monthA)
	second.ClientMsgID = first.ClientMsgID
	second.Content = json.RawMessage(`{"text":"something else"}`)
	res := mustAppend(t, s, tenant, second, ports.DuplicateClientMsgID)
	sameMessage(t, res.Existing, first)
	if res.Hash != hashOf(first) {
		t.Fatalf("Hash = %q, want the first message's %q", res.Hash, hashOf(first))
	}
	// The same attempt again: a resend whose idempotency record Redis lost and made again
	// names the tombstoned attempt. Same answer, one tombstone.
	again := mustAppend(t, s, tenant, second, ports.DuplicateClientMsgID)
	sameMessage(t, again.Existing, first)

	tomb, err := s.Get(ctx, tenant, monthA, "grp_1", 2)
	if err != nil {
		t.Fatalf("Get of the tombstone: %v", err)
	}
	if tomb.Status != message.StatusDeleted || tomb.MsgID != second.MsgID || len(tomb.Content) != 0 || tomb.ClientMsgID != "" {
		t.Fatalf("tombstone = %+v, want status deleted, msg_id %d, no content, no client_msg_id", tomb, second.MsgID)
	}
	wantSeqs(t, page(t, s, tenant, monthA, message.PageQuery{Topic: "grp_1", Limit: 10, IncludeDeleted: true}), 1, 2)
	wantSeqs(t, page(t, s, tenant, monthA, message.PageQuery{Topic: "grp_1", Limit: 10}), 1)
	wantRoute(t, s, tenant, "grp_1", segment{monthA, 1, 2, 2})
}

// queuedMark: the dedup record says whether the message's deliver job was queued, for a
// resend with the same msg_id and for one that lost it (Redis lost the idempotency record).
func queuedMark(t *testing.T, s ports.MessageStore, shards ports.ShardStore, tenant string) {
	marks, ok := s.(ports.QueuedMarks)
	if !ok {
		t.Fatalf("%T is not a ports.QueuedMarks", s)
	}
	ctx := context.Background()
	writable(t, shards, tenant, monthA)
	first := newMessage("grp_1", 1, 1001, monthA)
	if res := mustAppend(t, s, tenant, first, ports.Stored); res.Queued {
		t.Fatal("a new message reports queued")
	}
	if res := mustAppend(t, s, tenant, first, ports.AlreadyStored); res.Queued {
		t.Fatal("a resend before the mark reports queued")
	}
	if err := marks.MarkQueued(ctx, tenant, first.Topic, first.From, first.ClientMsgID); err != nil {
		t.Fatalf("MarkQueued: %v", err)
	}
	if err := marks.MarkQueued(ctx, tenant, first.Topic, first.From, "never-sent"); err != nil {
		t.Fatalf("MarkQueued of a missing record: %v", err)
	}
	if res := mustAppend(t, s, tenant, first, ports.AlreadyStored); !res.Queued {
		t.Fatal("a resend after the mark does not report queued")
	}
	lost := newMessage("grp_1", 2, 1002, monthA)
	lost.ClientMsgID = first.ClientMsgID
	lost.Content = first.Content
	if res := mustAppend(t, s, tenant, lost, ports.DuplicateClientMsgID); !res.Queued || res.Existing.MsgID != first.MsgID {
		t.Fatalf("a resend under a new msg_id: queued %v, existing msg_id %d", res.Queued, res.Existing.MsgID)
	}
	other := newMessage("grp_1", 3, 1003, monthA)
	if res := mustAppend(t, s, tenant, other, ports.Stored); res.Queued {
		t.Fatal("another message reports queued")
	}
	if res := mustAppend(t, s, tenant, other, ports.AlreadyStored); res.Queued {
		t.Fatal("the mark of one record flagged another")
	}
}

// freshBehindNewestWritable: once the catalog records a switch to a later month, AppendFresh
// refuses a new row in an earlier one allocated after the switch's instant (a stale Redis
// handed its month out), while it takes one allocated before it (a send in flight across the
// switch) or before the switch is recorded, Append still takes a late write of a month fixed
// before, and a message stored before the switch is answered as always.
func freshBehindNewestWritable(t *testing.T, s ports.MessageStore, shards ports.ShardStore, tenant string) {
	ctx := context.Background()
	switchAt := monthB.Start().Add(-24 * time.Hour) // an early switch
	before, after := switchAt.Add(-time.Millisecond), switchAt.Add(time.Millisecond)
	writable(t, shards, tenant, monthA)
	first := newMessage("grp_1", 1, 1001, monthA)
	if res, err := s.AppendFresh(ctx, tenant, first, hashOf(first), before); err != nil || res.Outcome != ports.Stored {
		t.Fatalf("AppendFresh in the newest writable month: %+v, %v", res, err)
	}
	// The later month is writable, the earlier one sealing, the switch not yet recorded.
	writable(t, shards, tenant, monthB)
	if err := shards.SetState(ctx, tenant, monthA, shard.Writable, shard.Sealing); err != nil {
		t.Fatalf("SetState %s sealing: %v", monthA, err)
	}
	unrecorded := newMessage("grp_1", 2, 1002, monthA)
	if res, err := s.AppendFresh(ctx, tenant, unrecorded, hashOf(unrecorded), after); err != nil || res.Outcome != ports.Stored {
		t.Fatalf("AppendFresh before the switch is recorded: %+v, %v", res, err)
	}
	for _, at := range []time.Time{switchAt, after.Add(time.Hour)} { // the first record stands
		if err := shards.RecordSwitch(ctx, tenant, monthB, at); err != nil {
			t.Fatalf("RecordSwitch %s at %s: %v", monthB, at, err)
		}
	}
	if got := catalogInfo(t, shards, tenant, monthB).ActiveSince; !got.Equal(switchAt) {
		t.Fatalf("ActiveSince of %s = %s, want the first record %s", monthB, got, switchAt)
	}
	inFlight := newMessage("grp_1", 3, 1003, monthA)
	if res, err := s.AppendFresh(ctx, tenant, inFlight, hashOf(inFlight), before); err != nil || res.Outcome != ports.Stored {
		t.Fatalf("AppendFresh allocated before the switch, written after it: %+v, %v", res, err)
	}
	stale := newMessage("grp_1", 4, 1004, monthA)
	if _, err := s.AppendFresh(ctx, tenant, stale, hashOf(stale), after); !errors.Is(err, shard.ErrMonthBehind) {
		t.Fatalf("AppendFresh of a new message allocated after the switch in the month before: err = %v, want shard.ErrMonthBehind", err)
	}
	reused := newMessage("grp_1", 5, 1005, monthA)
	reused.ClientMsgID, reused.Content = first.ClientMsgID, first.Content
	if _, err := s.AppendFresh(ctx, tenant, reused, hashOf(reused), after); !errors.Is(err, shard.ErrMonthBehind) {
		t.Fatalf("AppendFresh of a reused client_msg_id (a tombstone) after the switch in the month before: err = %v, want shard.ErrMonthBehind", err)
	}
	if res, err := s.AppendFresh(ctx, tenant, first, hashOf(first), after); err != nil || res.Outcome != ports.AlreadyStored {
		t.Fatalf("AppendFresh of a message stored before the switch: %+v, %v; want AlreadyStored", res, err)
	} else {
		sameMessage(t, res.Existing, first)
	}
	// Nothing of the refused attempts was written: the seqs are free, the route unchanged.
	wantRoute(t, s, tenant, "grp_1", segment{monthA, 1, 3, 3})
	reused.Month = monthB
	if res, err := s.AppendFresh(ctx, tenant, reused, hashOf(reused), after); err != nil || res.Outcome != ports.DuplicateClientMsgID {
		t.Fatalf("AppendFresh of a reused client_msg_id in the newest writable month: %+v, %v", res, err)
	} else {
		sameMessage(t, res.Existing, first)
	}
	// A late write of a month an idempotency record fixed before the switch (seed 000 §5.3).
	mustAppend(t, s, tenant, stale, ports.Stored)
	wantRoute(t, s, tenant, "grp_1", segment{monthA, 1, 4, 4}, segment{monthB, 5, 5, 1})
}

// freshRecordsItsMonthActive: AppendFresh records its month active by the allocation's
// instant when the catalog holds only a later one (an early switch whose record was lost with
// the node that made it), so a fresh allocation in the month before made after it is refused
// though nothing else recorded the switch, while one made before it is taken; a later
// allocation in the month leaves the instant.
func freshRecordsItsMonthActive(t *testing.T, s ports.MessageStore, shards ports.ShardStore, tenant string) {
	ctx := context.Background()
	writable(t, shards, tenant, monthA)
	writable(t, shards, tenant, monthB)
	// The month's first instant, as preparing it records.
	if err := shards.RecordSwitch(ctx, tenant, monthB, monthB.Start()); err != nil {
		t.Fatalf("RecordSwitch %s: %v", monthB, err)
	}
	early := monthB.Start().Add(-time.Hour)
	first := newMessage("grp_1", 1, 1001, monthB)
	if res, err := s.AppendFresh(ctx, tenant, first, hashOf(first), early); err != nil || res.Outcome != ports.Stored {
		t.Fatalf("AppendFresh in %s before its first instant: %+v, %v", monthB, res, err)
	}
	next := newMessage("grp_1", 2, 1002, monthB)
	if res, err := s.AppendFresh(ctx, tenant, next, hashOf(next), early.Add(time.Minute)); err != nil || res.Outcome != ports.Stored {
		t.Fatalf("AppendFresh of a later allocation in %s: %+v, %v", monthB, res, err)
	}
	if got := catalogInfo(t, shards, tenant, monthB).ActiveSince; !got.Equal(early) {
		t.Fatalf("ActiveSince of %s = %s, want the first stored allocation's instant %s", monthB, got, early)
	}
	stale := newMessage("grp_2", 1, 1003, monthA)
	if _, err := s.AppendFresh(ctx, tenant, stale, hashOf(stale), early.Add(time.Millisecond)); !errors.Is(err, shard.ErrMonthBehind) {
		t.Fatalf("AppendFresh in %s allocated after a stored one of %s: err = %v, want shard.ErrMonthBehind", monthA, monthB, err)
	}
	inFlight := newMessage("grp_2", 1, 1004, monthA)
	if res, err := s.AppendFresh(ctx, tenant, inFlight, hashOf(inFlight), early.Add(-time.Millisecond)); err != nil || res.Outcome != ports.Stored {
		t.Fatalf("AppendFresh in %s allocated before the stored one of %s: %+v, %v", monthA, monthB, res, err)
	}
	wantRoute(t, s, tenant, "grp_2", segment{monthA, 1, 1, 1})
}

// catalogInfo is m's catalog row.
func catalogInfo(t *testing.T, shards ports.ShardStore, tenant string, m month.Month) shard.Info {
	t.Helper()
	infos, err := shards.Catalog(context.Background(), tenant)
	if err != nil {
		t.Fatalf("Catalog: %v", err)
	}
	for _, in := range infos {
		if in.Month == m {
			return in
		}
	}
	t.Fatalf("%s is not in the catalog", m)
	return shard.Info{}
}

func takenSeq(t *testing.T, s ports.MessageStore, shards ports.ShardStore, tenant string) {
	ctx := context.Background()
	writable(t, shards, tenant, monthA)
	mustAppend(t, s, tenant, newMessage("grp_1", 1, 1001, monthA), ports.Stored)

	intruder := newMessage("grp_1", 1, 1002, monthA)
	if _, err := s.Append(ctx, tenant, intruder, hashOf(intruder)); !errors.Is(err, seq.ErrTaken) {
		t.Fatalf("Append on a taken seq: err = %v, want seq.ErrTaken", err)
	}
	// Nothing of the failed attempt stays: its client_msg_id is free for the reallocated seq.
	intruder.Seq = 2
	mustAppend(t, s, tenant, intruder, ports.Stored)
	wantSeqs(t, page(t, s, tenant, monthA, message.PageQuery{Topic: "grp_1", Limit: 10, IncludeDeleted: true}), 1, 2)
	wantRoute(t, s, tenant, "grp_1", segment{monthA, 1, 2, 2})
}

func monthMissing(t *testing.T, s ports.MessageStore, shards ports.ShardStore, tenant string) {
	ctx := context.Background()
	m := newMessage("grp_1", 1, 1001, monthA)
	if _, err := s.Append(ctx, tenant, m, hashOf(m)); !errors.Is(err, shard.ErrMonthMissing) {
		t.Fatalf("Append: err = %v, want shard.ErrMonthMissing", err)
	}
	if _, err := s.Get(ctx, tenant, monthA, "grp_1", 1); !errors.Is(err, shard.ErrMonthMissing) {
		t.Fatalf("Get: err = %v, want shard.ErrMonthMissing", err)
	}
	if _, err := s.Page(ctx, tenant, monthA, message.PageQuery{Topic: "grp_1", Limit: 10}); !errors.Is(err, shard.ErrMonthMissing) {
		t.Fatalf("Page: err = %v, want shard.ErrMonthMissing", err)
	}
	if _, err := s.Page(ctx, tenant, month.Month(203013), message.PageQuery{Topic: "grp_1", Limit: 10}); err == nil {
		t.Fatal("Page of an invalid month succeeded")
	}
}

func monthStates(t *testing.T, s ports.MessageStore, shards ports.ShardStore, tenant string) {
	ctx := context.Background()
	if err := shards.EnsureTable(ctx, tenant, monthA); err != nil {
		t.Fatalf("EnsureTable: %v", err)
	}
	steps := []struct {
		to     shard.State
		stored bool
	}{
		{shard.Prepared, true},
		{shard.Writable, true},
		{shard.Sealing, true}, // late writes of the previous month (seed 000 §5.3)
		{shard.Sealed, false},
		{shard.Archived, false},
	}
	from := shard.Prepared
	for i, step := range steps {
		if err := shards.SetState(ctx, tenant, monthA, from, step.to); err != nil {
			t.Fatalf("SetState %s→%s: %v", from, step.to, err)
		}
		from = step.to
		m := newMessage("grp_1", int64(i+1), int64(1001+i), monthA)
		_, err := s.Append(ctx, tenant, m, hashOf(m))
		switch {
		case step.stored && err != nil:
			t.Fatalf("Append in a %s month: %v", step.to, err)
		case !step.stored && !errors.Is(err, shard.ErrMonthNotWritable):
			t.Fatalf("Append in a %s month: err = %v, want shard.ErrMonthNotWritable", step.to, err)
		}
	}
	wantRoute(t, s, tenant, "grp_1", segment{monthA, 1, 3, 3})
}

func paging(t *testing.T, s ports.MessageStore, shards ports.ShardStore, tenant string) {
	writable(t, shards, tenant, monthA)
	for i := int64(1); i <= 10; i++ {
		mustAppend(t, s, tenant, newMessage("grp_1", i, 1000+i, monthA), ports.Stored)
	}
	mustAppend(t, s, tenant, newMessage("grp_2", 1, 2001, monthA), ports.Stored)
	cases := []struct {
		name string
		q    message.PageQuery
		want []int64
	}{
		{"all ascending", message.PageQuery{Limit: 100}, []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}},
		{"after, limited", message.PageQuery{After: 3, Limit: 4}, []int64{4, 5, 6, 7}},
		{"before, descending", message.PageQuery{Before: 8, Limit: 3, Desc: true}, []int64{7, 6, 5}},
		{"newest first", message.PageQuery{Limit: 2, Desc: true}, []int64{10, 9}},
		{"between, exclusive", message.PageQuery{After: 2, Before: 6, Limit: 100}, []int64{3, 4, 5}},
		{"between, descending", message.PageQuery{After: 2, Before: 6, Limit: 2, Desc: true}, []int64{5, 4}},
		{"past the end", message.PageQuery{After: 10, Limit: 10}, nil},
		{"zero limit", message.PageQuery{Limit: 0}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.q.Topic = "grp_1"
			wantSeqs(t, page(t, s, tenant, monthA, c.q), c.want...)
		})
	}
}

func segmentsAcrossMonths(t *testing.T, s ports.MessageStore, shards ports.ShardStore, tenant string) {
	ctx := context.Background()
	writable(t, shards, tenant, monthA)
	writable(t, shards, tenant, monthB)
	for i := int64(1); i <= 3; i++ {
		mustAppend(t, s, tenant, newMessage("grp_1", i, 1000+i, monthA), ports.Stored)
	}
	for i := int64(4); i <= 6; i++ {
		mustAppend(t, s, tenant, newMessage("grp_1", i, 1000+i, monthB), ports.Stored)
	}
	r := wantRoute(t, s, tenant, "grp_1", segment{monthA, 1, 3, 3}, segment{monthB, 4, 6, 3})
	if got, want := r[1].MinCreatedAt, newMessage("grp_1", 4, 1004, monthB).CreatedAt; !got.Equal(want) {
		t.Fatalf("segment MinCreatedAt = %v, want %v", got, want)
	}
	if got, want := r[1].MaxCreatedAt, newMessage("grp_1", 6, 1006, monthB).CreatedAt; !got.Equal(want) {
		t.Fatalf("segment MaxCreatedAt = %v, want %v", got, want)
	}
	if n, err := s.MaxSeq(ctx, tenant, "grp_1"); err != nil || n != 6 {
		t.Fatalf("MaxSeq = %d, %v; want 6", n, err)
	}
	if n, err := s.MaxSeq(ctx, tenant, "grp_9"); err != nil || n != 0 {
		t.Fatalf("MaxSeq of an empty topic = %d, %v; want 0", n, err)
	}
	wantRoute(t, s, tenant, "grp_9")
	wantSeqs(t, page(t, s, tenant, monthB, message.PageQuery{Topic: "grp_1", Limit: 10}), 4, 5, 6)
}

func overlapAcrossMonths(t *testing.T, s ports.MessageStore, shards ports.ShardStore, tenant string) {
	ctx := context.Background()
	writable(t, shards, tenant, monthA)
	writable(t, shards, tenant, monthB)
	mustAppend(t, s, tenant, newMessage("grp_1", 1, 1001, monthA), ports.Stored)
	mustAppend(t, s, tenant, newMessage("grp_1", 5, 1005, monthA), ports.Stored)

	inside := newMessage("grp_1", 3, 1003, monthB) // a hole of monthA's range, but still monthA's
	if _, err := s.Append(ctx, tenant, inside, hashOf(inside)); !errors.Is(err, seq.ErrTaken) {
		t.Fatalf("Append inside another month's range: err = %v, want seq.ErrTaken", err)
	}
	mustAppend(t, s, tenant, newMessage("grp_1", 6, 1006, monthB), ports.Stored)
	late := newMessage("grp_1", 7, 1007, monthA) // would stretch monthA over monthB
	if _, err := s.Append(ctx, tenant, late, hashOf(late)); !errors.Is(err, seq.ErrTaken) {
		t.Fatalf("Append stretching over another month: err = %v, want seq.ErrTaken", err)
	}
	mustAppend(t, s, tenant, newMessage("grp_1", 4, 1004, monthA), ports.Stored) // a late write
	wantRoute(t, s, tenant, "grp_1", segment{monthA, 1, 5, 3}, segment{monthB, 6, 6, 1})
}

// outOfMonthOrder: a seq no row holds is still refused where it would sit out of the months'
// order: below a seq of an earlier month, or above one of a later month (route.OutOfOrder;
// DESIGN §1.10). Only a counter that stepped back hands such a seq out, and the send re-seeds it.
func outOfMonthOrder(t *testing.T, s ports.MessageStore, shards ports.ShardStore, tenant string) {
	ctx := context.Background()
	writable(t, shards, tenant, monthA)
	writable(t, shards, tenant, monthB)
	// Neither refused seq falls inside a range of another month: seqs 1-2 of grp_1 and 1-4
	// of grp_2 are holes (sends that failed), then the counter stepped back behind them.
	mustAppend(t, s, tenant, newMessage("grp_1", 3, 1003, monthA), ports.Stored)
	mustAppend(t, s, tenant, newMessage("grp_2", 6, 2006, monthB), ports.Stored)
	tests := []struct {
		name string
		m    message.Message
	}{
		{"below a seq of an earlier month", newMessage("grp_1", 2, 1002, monthB)},
		{"above a seq of a later month", newMessage("grp_2", 8, 2008, monthA)},
	}
	for _, tt := range tests {
		if _, err := s.Append(ctx, tenant, tt.m, hashOf(tt.m)); !errors.Is(err, seq.ErrTaken) {
			t.Fatalf("Append %s seq %d in %s, %s: err = %v, want seq.ErrTaken", tt.m.Topic, tt.m.Seq, tt.m.Month, tt.name, err)
		}
	}
	mustAppend(t, s, tenant, newMessage("grp_1", 4, 1004, monthB), ports.Stored)
	mustAppend(t, s, tenant, newMessage("grp_2", 5, 2005, monthA), ports.Stored)
	wantRoute(t, s, tenant, "grp_1", segment{monthA, 3, 3, 1}, segment{monthB, 4, 4, 1})
	wantRoute(t, s, tenant, "grp_2", segment{monthA, 5, 5, 1}, segment{monthB, 6, 6, 1})
}

func concurrentAppends(t *testing.T, s ports.MessageStore, shards ports.ShardStore, tenant string) {
	ctx := context.Background()
	writable(t, shards, tenant, monthA)
	const topics, perTopic = 4, 50
	var wg sync.WaitGroup
	errs := make(chan error, topics*perTopic)
	for tp := range topics {
		for i := range perTopic {
			wg.Go(func() {
				m := newMessage(fmt.Sprintf("grp_%d", tp+1), int64(i+1), int64(10000*(tp+1)+i), monthA)
				res, err := s.Append(ctx, tenant, m, hashOf(m))
				if err == nil && res.Outcome != ports.Stored {
					err = fmt.Errorf("%s seq %d: outcome %d, want Stored", m.Topic, m.Seq, res.Outcome)
				}
				if err != nil {
					errs <- err
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for tp := range topics {
		wantRoute(t, s, tenant, fmt.Sprintf("grp_%d", tp+1), segment{monthA, 1, perTopic, perTopic})
	}
	cat, err := shards.Catalog(ctx, tenant)
	if err != nil {
		t.Fatalf("Catalog: %v", err)
	}
	if len(cat) != 1 || cat[0].RowCount != topics*perTopic {
		t.Fatalf("Catalog = %+v, want one month with %d rows", cat, topics*perTopic)
	}
}

func concurrentRetries(t *testing.T, s ports.MessageStore, shards ports.ShardStore, tenant string) {
	ctx := context.Background()
	writable(t, shards, tenant, monthA)
	const messages, copies = 20, 3
	var mu sync.Mutex
	outcomes := make(map[int64][]ports.AppendOutcome)
	var wg sync.WaitGroup
	for i := range messages {
		m := newMessage("grp_1", int64(i+1), int64(1001+i), monthA)
		for range copies {
			wg.Go(func() {
				res, err := s.Append(ctx, tenant, m, hashOf(m))
				if err != nil {
					t.Errorf("Append seq %d: %v", m.Seq, err)
					return
				}
				mu.Lock()
				outcomes[m.Seq] = append(outcomes[m.Seq], res.Outcome)
				mu.Unlock()
			})
		}
	}
	wg.Wait()
	for sq, got := range outcomes {
		stored := 0
		for _, o := range got {
			if o == ports.Stored {
				stored++
			} else if o != ports.AlreadyStored {
				t.Errorf("seq %d: outcome %d, want Stored or AlreadyStored", sq, o)
			}
		}
		if stored != 1 {
			t.Errorf("seq %d: stored %d times, want once", sq, stored)
		}
	}
	wantRoute(t, s, tenant, "grp_1", segment{monthA, 1, messages, messages})
}

// writable registers m and opens it for writes.
func writable(t *testing.T, shards ports.ShardStore, tenant string, m month.Month) {
	t.Helper()
	ctx := context.Background()
	if err := shards.EnsureTable(ctx, tenant, m); err != nil {
		t.Fatalf("EnsureTable %s: %v", m, err)
	}
	if err := shards.SetState(ctx, tenant, m, shard.Prepared, shard.Writable); err != nil {
		t.Fatalf("SetState %s writable: %v", m, err)
	}
}

// newMessage is a text message whose fields derive from its arguments, so equal arguments
// give equal messages.
func newMessage(topicName string, sq, msgID int64, m month.Month) message.Message {
	return message.Message{
		Topic: topicName, GroupID: 1, ConversationID: 0, Seq: sq, MsgID: msgID, From: 7,
		ClientMsgID: fmt.Sprintf("c-%d", msgID), Type: "text",
		Content: json.RawMessage(fmt.Sprintf(`{"text":"message %d"}`, msgID)),
		Status:  message.StatusNormal, Version: 1,
		CreatedAt: m.Start().Add(time.Duration(sq)*time.Minute + 123*time.Millisecond),
		Month:     m,
	}
}

func hashOf(m message.Message) string {
	return message.Draft{
		ClientMsgID: m.ClientMsgID, Type: m.Type, Content: m.Content, Mentions: m.Mentions,
		MentionAll: m.MentionAll, ReplySeq: m.ReplySeq,
	}.Hash()
}

func mustAppend(t *testing.T, s ports.MessageStore, tenant string, m message.Message, want ports.AppendOutcome) ports.AppendResult {
	t.Helper()
	res, err := s.Append(context.Background(), tenant, m, hashOf(m))
	if err != nil {
		t.Fatalf("Append %s seq %d: %v", m.Topic, m.Seq, err)
	}
	if res.Outcome != want {
		t.Fatalf("Append %s seq %d: outcome %d, want %d", m.Topic, m.Seq, res.Outcome, want)
	}
	return res
}

func page(t *testing.T, s ports.MessageStore, tenant string, m month.Month, q message.PageQuery) []message.Message {
	t.Helper()
	got, err := s.Page(context.Background(), tenant, m, q)
	if err != nil {
		t.Fatalf("Page %+v: %v", q, err)
	}
	return got
}

func wantSeqs(t *testing.T, got []message.Message, want ...int64) {
	t.Helper()
	seqs := make([]int64, len(got))
	for i, m := range got {
		seqs[i] = m.Seq
	}
	if fmt.Sprint(seqs) != fmt.Sprint(append([]int64{}, want...)) {
		t.Fatalf("seqs = %v, want %v", seqs, want)
	}
}

type segment struct {
	month           month.Month
	min, max, count int64
}

// wantRoute checks the seq ranges of a topic's route and returns the route.
func wantRoute(t *testing.T, s ports.MessageStore, tenant, topicName string, want ...segment) route.Route {
	t.Helper()
	r, err := s.Segments(context.Background(), tenant, topicName)
	if err != nil {
		t.Fatalf("Segments %s: %v", topicName, err)
	}
	got := make([]segment, len(r))
	for i, sg := range r {
		got[i] = segment{sg.Month, sg.MinSeq, sg.MaxSeq, sg.Count}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("Segments %s = %v, want %v", topicName, got, want)
	}
	return r
}

// sameMessage compares what a store must keep. JSON is compared by meaning: MySQL 8 rewrites a
// JSON document's spacing and key order.
func sameMessage(t *testing.T, got, want message.Message) {
	t.Helper()
	if !sameJSON(got.Content, want.Content) {
		t.Fatalf("content = %s, want %s", got.Content, want.Content)
	}
	got.Content, want.Content = nil, nil
	if len(got.Mentions) == 0 && len(want.Mentions) == 0 {
		got.Mentions, want.Mentions = nil, nil
	}
	if !got.CreatedAt.Equal(want.CreatedAt) || !got.EditedAt.Equal(want.EditedAt) {
		t.Fatalf("times = %v/%v, want %v/%v", got.CreatedAt, got.EditedAt, want.CreatedAt, want.EditedAt)
	}
	got.CreatedAt, want.CreatedAt, got.EditedAt, want.EditedAt = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", want) {
		t.Fatalf("message =\n%+v\nwant\n%+v", got, want)
	}
}

func sameJSON(a, b []byte) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return bytes.Equal(a, b)
	}
	ja, _ := json.Marshal(va)
	jb, _ := json.Marshal(vb)
	return bytes.Equal(ja, jb)
}
