package e2e

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/imdhq/imd/clients/go/wire"
)

// TestSeqHoleIsClosedWithATombstone: a node that dies between the seq allocation and the
// commit leaves a seq no message ever takes (DESIGN §4). Once the message after it is older
// than shard.seq_hole_after, the sweeper writes a tombstone there, so sync returns every seq
// and a client waiting for the missing one is released.
func TestSeqHoleIsClosedWithATombstone(t *testing.T) {
	srv := Start(t, Options{Env: map[string]string{
		"IMD_SHARD_SEQ_HOLE_SWEEP_INTERVAL": "200ms", "IMD_SHARD_SEQ_HOLE_AFTER": "1s",
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tokA, tokB := srv.User(4401), srv.User(4402)
	topic := srv.Group(44, 4401, 4402)
	a, b := srv.Connect(ctx, tokA, 1), srv.Connect(ctx, tokB, 1)
	closedBefore := srv.metricValue("group_message_seq_hole_closed_total")

	first := sendN(t, ctx, a, topic, "before", 1)[0]
	// What the crashed send left: its seq allocated in Redis, no row.
	rc := srv.Redis()
	if err := rc.Do(ctx, rc.B().Incr().Key(srv.topicKeys(topic).Seq(topic)).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	hole := first.Seq + 1
	after := sendN(t, ctx, a, topic, "after", 1)[0]
	if after.Seq != hole+1 {
		t.Fatalf("send after the hole got seq %d, want %d", after.Seq, hole+1)
	}

	var msgs []wire.Message
	eventually(t, 60*time.Second, "the hole closed as a tombstone", func() bool {
		msgs = syncAll(t, ctx, b, topic)
		return slices.Equal(seqsOf(msgs), []int64{first.Seq, hole, after.Seq})
	})
	tomb := msgs[1]
	if tomb.Status != wire.StatusDeleted || tomb.MsgID == first.MsgID || tomb.MsgID == after.MsgID {
		t.Fatalf("seq %d after the sweep: %+v, want a tombstone of its own msg_id", hole, tomb)
	}
	for _, m := range []wire.Message{msgs[0], msgs[2]} {
		if m.Status == wire.StatusDeleted {
			t.Fatalf("a sent message became a tombstone: %+v", m)
		}
	}
	eventually(t, 30*time.Second, "group_message_seq_hole_closed_total rises", func() bool {
		return srv.metricValue("group_message_seq_hole_closed_total") > closedBefore
	})
}
