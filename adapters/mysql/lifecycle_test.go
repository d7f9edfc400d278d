package mysql

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/shard"
	"github.com/imdhq/imd/ports"
	"github.com/imdhq/imd/ports/contract"
)

func newMirrorFixture(t *testing.T) contract.MirrorFixture {
	c, tenant := newTestCluster(t)
	s := NewMessageStore(c, MessageStoreOptions{})
	t.Cleanup(func() { s.Close() })
	return contract.MirrorFixture{
		Tenant: tenant, Store: s, Shards: NewShardStore(c), Mirror: NewRouteMirror(c), Housekeeping: NewHousekeeping(c),
	}
}

func TestRouteMirrorContract(t *testing.T) { contract.RouteMirror(t, newMirrorFixture) }

func TestShardHousekeepingContract(t *testing.T) { contract.ShardHousekeeping(t, newMirrorFixture) }

// TestRecountRepairsADamagedMirror damages mirror rows the way no writer does and checks the
// recount restores them from the month table.
func TestRecountRepairsADamagedMirror(t *testing.T) {
	const m = month.Month(203003)
	tests := []struct {
		name   string
		damage string // SQL run against the mirror
	}{
		{name: "count and max too low", damage: "UPDATE im_group_message_topic_shards SET max_seq = 2, message_count = 2 WHERE topic = 'grp_1'"},
		{name: "range too wide", damage: "UPDATE im_group_message_topic_shards SET min_seq = 1, max_seq = 99 WHERE topic = 'grp_1'"},
		{name: "row lost", damage: "DELETE FROM im_group_message_topic_shards WHERE topic = 'grp_1'"},
		{name: "row without messages", damage: "INSERT INTO im_group_message_topic_shards (topic, shard_month, min_seq, max_seq, message_count, min_created_at, max_created_at) VALUES ('grp_1', '203004', 9, 9, 1, NOW(3), NOW(3))"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			c, tenant := newTestCluster(t)
			s := NewMessageStore(c, MessageStoreOptions{})
			t.Cleanup(func() { s.Close() })
			shards, mirror := NewShardStore(c), NewRouteMirror(c)
			for _, mo := range []month.Month{m, m.Next()} {
				if err := shards.EnsureTable(ctx, tenant, mo); err != nil {
					t.Fatal(err)
				}
			}
			at := m.Start().Add(time.Hour)
			for i := int64(3); i <= 5; i++ {
				msg := message.Message{Topic: "grp_1", GroupID: 1, Seq: i, MsgID: 100 + i, From: 7, ClientMsgID: "c" + string(rune('0'+i)),
					Type: "text", Status: message.StatusNormal, Version: 1, CreatedAt: at.Add(time.Duration(i) * time.Minute), Month: m}
				if _, err := s.Append(ctx, tenant, msg, "h"); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := rawDB(t, c, tenant).ExecContext(ctx, tc.damage); err != nil {
				t.Fatal(err)
			}
			for _, mo := range []month.Month{m, m.Next()} {
				if _, _, err := mirror.Recount(ctx, tenant, mo, "grp_1"); err != nil {
					t.Fatalf("Recount %s: %v", mo, err)
				}
			}
			rt, err := s.Segments(ctx, tenant, "grp_1")
			if err != nil {
				t.Fatal(err)
			}
			if len(rt) != 1 || rt[0].Month != m || rt[0].MinSeq != 3 || rt[0].MaxSeq != 5 || rt[0].Count != 3 ||
				!rt[0].MinCreatedAt.Equal(at.Add(3*time.Minute)) || !rt[0].MaxCreatedAt.Equal(at.Add(5*time.Minute)) {
				t.Fatalf("mirror after recount = %+v", rt)
			}
		})
	}
}

// TestRefreshStatsFillsTheCatalogRow: the catalog's own columns, which no port reads back,
// get the mirror's figures (seed 000 §6.6).
func TestRefreshStatsFillsTheCatalogRow(t *testing.T) {
	ctx := context.Background()
	const m = month.Month(203005)
	c, tenant := newTestCluster(t)
	s := NewMessageStore(c, MessageStoreOptions{})
	t.Cleanup(func() { s.Close() })
	shards := NewShardStore(c)
	if err := shards.EnsureTable(ctx, tenant, m); err != nil {
		t.Fatal(err)
	}
	if err := shards.SetState(ctx, tenant, m, shard.Prepared, shard.Writable); err != nil {
		t.Fatal(err)
	}
	at := m.Start().Add(time.Hour)
	for i, topic := range []string{"grp_1", "grp_1", "grp_2"} {
		msg := message.Message{Topic: topic, GroupID: 1, Seq: int64(i + 1), MsgID: int64(100 + i), From: 7, ClientMsgID: string(rune('a' + i)),
			Type: "text", Status: message.StatusNormal, Version: 1, CreatedAt: at.Add(time.Duration(i) * time.Minute), Month: m}
		if res, err := s.Append(ctx, tenant, msg, "h"); err != nil || res.Outcome != ports.Stored {
			t.Fatal(res, err)
		}
	}
	if err := NewHousekeeping(c).RefreshStats(ctx, tenant, m); err != nil {
		t.Fatal(err)
	}
	var rows int64
	var lo, hi time.Time
	err := rawDB(t, c, tenant).QueryRowContext(ctx,
		"SELECT row_count, min_created_at, max_created_at FROM im_group_message_shards WHERE shard_month = ?", m.String()).Scan(&rows, &lo, &hi)
	if err != nil {
		t.Fatal(err)
	}
	if rows != 3 || !lo.Equal(at) || !hi.Equal(at.Add(2*time.Minute)) {
		t.Fatalf("catalog row: %d rows, %s – %s", rows, lo, hi)
	}
}

// TestRecountUnderConcurrentWritesStaysExact recounts a topic again and again while batches
// of it commit: every batch must be counted exactly once, and nothing may deadlock.
func TestRecountUnderConcurrentWritesStaysExact(t *testing.T) {
	ctx := context.Background()
	const m = month.Month(203006)
	c, tenant := newTestCluster(t)
	s := NewMessageStore(c, MessageStoreOptions{})
	t.Cleanup(func() { s.Close() })
	shards, mirror := NewShardStore(c), NewRouteMirror(c)
	if err := shards.EnsureTable(ctx, tenant, m); err != nil {
		t.Fatal(err)
	}
	const writers, each = 8, 25
	done := make(chan error, writers)
	for w := range writers {
		go func() {
			for i := range each {
				seq := int64(w*each + i + 1)
				msg := message.Message{Topic: "grp_1", GroupID: 1, Seq: seq, MsgID: 1000 + seq, From: int64(w + 1), ClientMsgID: fmt.Sprint("c", seq),
					Type: "text", Status: message.StatusNormal, Version: 1, CreatedAt: m.Start().Add(time.Duration(seq) * time.Second), Month: m}
				if _, err := s.Append(ctx, tenant, msg, "h"); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
	}
	stop := make(chan struct{})
	recounts := make(chan error, 1)
	go func() {
		for {
			select {
			case <-stop:
				recounts <- nil
				return
			default:
			}
			// A deadlock victim may be either side; the writers retry theirs, this loop its own.
			if _, _, err := mirror.Recount(ctx, tenant, m, "grp_1"); err != nil && !isTransient(err) {
				recounts <- err
				return
			}
		}
	}()
	for range writers {
		if err := <-done; err != nil {
			t.Fatalf("append: %v", err)
		}
	}
	close(stop)
	if err := <-recounts; err != nil {
		t.Fatalf("recount: %v", err)
	}
	rt, err := s.Segments(ctx, tenant, "grp_1")
	if err != nil {
		t.Fatal(err)
	}
	if len(rt) != 1 || rt[0].MinSeq != 1 || rt[0].MaxSeq != writers*each || rt[0].Count != writers*each {
		t.Fatalf("mirror after concurrent recounts = %+v, want 1..%d counted once", rt, writers*each)
	}
}
