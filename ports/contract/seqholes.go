package contract

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/seq"
	"github.com/imdhq/imd/core/domain/shard"
	"github.com/imdhq/imd/ports"
)

// SeqHolesStore is a message store that also finds and closes seq holes.
type SeqHolesStore interface {
	ports.MessageStore
	ports.SeqHoles
}

// SeqHolesFactory returns an empty tenant: its store and the shard store of the same database.
type SeqHolesFactory func(t *testing.T) (store SeqHolesStore, shards ports.ShardStore, tenant string)

// SeqHoles runs the seq-hole contract (DESIGN §4: holes end as tombstones).
func SeqHoles(t *testing.T, newStore SeqHolesFactory) {
	cases := []struct {
		name string
		run  func(t *testing.T, s SeqHolesStore, shards ports.ShardStore, tenant string)
	}{
		{"suspects are the topics whose mirror shows a gap", holeSuspects},
		{"a closed hole is a tombstone in pages, mirror and max seq", closeHole},
		{"a taken seq or an overlapping range is ErrTaken", closeTakenHole},
		{"a month that takes no writes refuses the tombstone", closeHoleSealed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, shards, tenant := newStore(t)
			c.run(t, s, shards, tenant)
		})
	}
}

// holeTombstone is the sweeper's tombstone at seq of topic in m.
func holeTombstone(topicName string, sq, msgID int64, m month.Month) message.Message {
	t := newMessage(topicName, sq, msgID, m)
	t.ClientMsgID, t.Content, t.From, t.Status = "", nil, 0, message.StatusDeleted
	return t
}

func suspects(t *testing.T, s SeqHolesStore, tenant string, m month.Month, after string, limit int) []string {
	t.Helper()
	got, err := s.HoleSuspects(context.Background(), tenant, m, after, limit)
	if err != nil {
		t.Fatalf("HoleSuspects %s after %q: %v", m, after, err)
	}
	return got
}

func holeSuspects(t *testing.T, s SeqHolesStore, shards ports.ShardStore, tenant string) {
	writable(t, shards, tenant, monthA)
	writable(t, shards, tenant, monthB)
	id := int64(2000)
	add := func(topicName string, m month.Month, seqs ...int64) {
		for _, sq := range seqs {
			id++
			mustAppend(t, s, tenant, newMessage(topicName, sq, id, m), ports.Stored)
		}
	}
	add("grp_full", monthA, 1, 2, 3)
	add("grp_full", monthB, 4, 5)   // follows monthA
	add("grp_inner", monthA, 1, 3)  // seq 2 missing
	add("grp_start", monthA, 2, 3)  // seq 1 missing
	add("grp_across", monthA, 1, 2) // seq 3 missing between the months
	add("grp_across", monthB, 4)

	if got, want := suspects(t, s, tenant, monthA, "", 10), []string{"grp_inner", "grp_start"}; !slices.Equal(got, want) {
		t.Fatalf("suspects of %s = %v, want %v", monthA, got, want)
	}
	if got, want := suspects(t, s, tenant, monthB, "", 10), []string{"grp_across"}; !slices.Equal(got, want) {
		t.Fatalf("suspects of %s = %v, want %v", monthB, got, want)
	}
	if got, want := suspects(t, s, tenant, monthA, "grp_inner", 10), []string{"grp_start"}; !slices.Equal(got, want) {
		t.Fatalf("suspects of %s after grp_inner = %v, want %v", monthA, got, want)
	}
	if got, want := suspects(t, s, tenant, monthA, "", 1), []string{"grp_inner"}; !slices.Equal(got, want) {
		t.Fatalf("suspects of %s, limit 1 = %v, want %v", monthA, got, want)
	}
}

func closeHole(t *testing.T, s SeqHolesStore, shards ports.ShardStore, tenant string) {
	ctx := context.Background()
	writable(t, shards, tenant, monthA)
	writable(t, shards, tenant, monthB)
	mustAppend(t, s, tenant, newMessage("grp_1", 1, 3001, monthA), ports.Stored)
	mustAppend(t, s, tenant, newMessage("grp_1", 3, 3003, monthB), ports.Stored)
	mustAppend(t, s, tenant, newMessage("grp_1", 5, 3005, monthB), ports.Stored)
	for _, sq := range []int64{2, 4} {
		if err := s.CloseHole(ctx, tenant, holeTombstone("grp_1", sq, 3100+sq, monthB)); err != nil {
			t.Fatalf("CloseHole seq %d: %v", sq, err)
		}
	}
	got := page(t, s, tenant, monthB, message.PageQuery{Topic: "grp_1", Limit: 10, IncludeDeleted: true})
	var seqs []int64
	for _, m := range got {
		seqs = append(seqs, m.Seq)
		if m.Seq%2 == 0 && (m.Status != message.StatusDeleted || m.ClientMsgID != "" || len(m.Content) > 0 || m.MsgID != 3100+m.Seq) {
			t.Fatalf("tombstone at seq %d = %+v, want status deleted, msg_id %d, no client_msg_id, no content", m.Seq, m, 3100+m.Seq)
		}
	}
	if !slices.Equal(seqs, []int64{2, 3, 4, 5}) {
		t.Fatalf("seqs of %s with tombstones = %v, want [2 3 4 5]", monthB, seqs)
	}
	if visible := page(t, s, tenant, monthB, message.PageQuery{Topic: "grp_1", Limit: 10}); len(visible) != 2 {
		t.Fatalf("page without tombstones has %d messages, want 2", len(visible))
	}
	rt, err := s.Segments(ctx, tenant, "grp_1")
	if err != nil {
		t.Fatal(err)
	}
	if len(rt) != 2 || rt[1].Month != monthB || rt[1].MinSeq != 2 || rt[1].MaxSeq != 5 || rt[1].Count != 4 {
		t.Fatalf("segments = %+v, want %s covering 2-5 with 4 rows", rt, monthB)
	}
	if got := suspects(t, s, tenant, monthB, "", 10); len(got) != 0 {
		t.Fatalf("suspects after closing = %v, want none", got)
	}
}

func closeTakenHole(t *testing.T, s SeqHolesStore, shards ports.ShardStore, tenant string) {
	ctx := context.Background()
	writable(t, shards, tenant, monthA)
	writable(t, shards, tenant, monthB)
	mustAppend(t, s, tenant, newMessage("grp_1", 1, 4001, monthA), ports.Stored)
	mustAppend(t, s, tenant, newMessage("grp_1", 3, 4003, monthA), ports.Stored)
	mustAppend(t, s, tenant, newMessage("grp_1", 5, 4005, monthB), ports.Stored)
	for _, c := range []struct {
		name string
		tomb message.Message
	}{
		{"stored seq", holeTombstone("grp_1", 3, 4103, monthA)},
		{"inside another month's range", holeTombstone("grp_1", 2, 4102, monthB)},
	} {
		if err := s.CloseHole(ctx, tenant, c.tomb); !errors.Is(err, seq.ErrTaken) {
			t.Fatalf("CloseHole of a %s: err = %v, want seq.ErrTaken", c.name, err)
		}
	}
	if got := page(t, s, tenant, monthA, message.PageQuery{Topic: "grp_1", Limit: 10, IncludeDeleted: true}); len(got) != 2 || got[1].MsgID != 4003 {
		t.Fatalf("%s after refused tombstones = %+v, want seqs 1 and 3 untouched", monthA, got)
	}
	// A late retry of the message whose seq was closed finds it taken.
	late := newMessage("grp_1", 4, 4004, monthB)
	if err := s.CloseHole(ctx, tenant, holeTombstone("grp_1", 4, 4104, monthB)); err != nil {
		t.Fatalf("CloseHole seq 4: %v", err)
	}
	if _, err := s.Append(ctx, tenant, late, hashOf(late)); !errors.Is(err, seq.ErrTaken) {
		t.Fatalf("Append at a closed seq: err = %v, want seq.ErrTaken", err)
	}
}

func closeHoleSealed(t *testing.T, s SeqHolesStore, shards ports.ShardStore, tenant string) {
	ctx := context.Background()
	writable(t, shards, tenant, monthA)
	mustAppend(t, s, tenant, newMessage("grp_1", 2, 5002, monthA), ports.Stored)
	for _, to := range []shard.State{shard.Sealing, shard.Sealed} {
		from := shard.Writable
		if to == shard.Sealed {
			from = shard.Sealing
		}
		if err := shards.SetState(ctx, tenant, monthA, from, to); err != nil {
			t.Fatalf("SetState %s: %v", to, err)
		}
	}
	if err := s.CloseHole(ctx, tenant, holeTombstone("grp_1", 1, 5101, monthA)); !errors.Is(err, shard.ErrMonthNotWritable) {
		t.Fatalf("CloseHole in a sealed month: err = %v, want shard.ErrMonthNotWritable", err)
	}
	if err := s.CloseHole(ctx, tenant, holeTombstone("grp_1", 1, 5102, monthB)); !errors.Is(err, shard.ErrMonthMissing) {
		t.Fatalf("CloseHole in a month missing from the catalog: err = %v, want shard.ErrMonthMissing", err)
	}
}
