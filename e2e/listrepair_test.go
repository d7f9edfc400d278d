package e2e

// Issue 33 item 3 (seed 003 §20 item 13): a deliver partition's queue lost while the
// conversation lists survive. The messages are in MySQL and every ACK stands, but the lost
// jobs never counted them: the list repair must bring each recipient's list and unread count
// to what MySQL holds.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/imdhq/imd/clients/go/client"
	"github.com/imdhq/imd/core/domain/delivery"
)

const repairPartitions = 2

// TestLostDeliverPartitionIsRepaired takes one partition away from the node (another "node"
// holds its lease), lets jobs pile up in its queue under load from every group, deletes the
// partition's queue and processing list, and gives the partition back. One group of the lost
// partition goes on sending (the consumer goes past a gap), one sends nothing more (its lost
// messages are the newest: a tail); the groups of the other partition lose nothing. Every
// recipient's list must end at each group's newest seq with an unread count of every message
// MySQL holds.
func TestLostDeliverPartitionIsRepaired(t *testing.T) {
	srv := Start(t, Options{Env: map[string]string{
		"IMD_DELIVER_PARTITIONS": strconv.Itoa(repairPartitions), "IMD_CLUSTER_LEASE_TTL": "3s",
		"IMD_DELIVER_REPAIR_INTERVAL": "500ms", "IMD_DELIVER_REPAIR_SETTLE": "1s",
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rc := srv.Redis()
	gapsBefore := srv.metricValue("deliver_list_gap_total")

	// Groups 331…: a sender and two recipients each, until the lost partition has two.
	var chats []chat
	lost := -1
	var inLost []int
	for g := int64(331); len(inLost) < 2; g++ {
		c := newChat(t, srv, ctx, g, 3, 3)
		p := delivery.PartitionOf(c.topic, repairPartitions)
		if lost < 0 {
			lost = p
		}
		if p == lost {
			inLost = append(inLost, len(chats))
		}
		chats = append(chats, c)
	}
	// The recipients' lists are built before anything is sent: the counts that follow are the
	// deliver workers' and the repair's, not a rebuild's.
	for _, c := range chats {
		for _, r := range c.conns[1:] {
			if _, err := r.Dialogs(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	sent := make([]int, len(chats))
	// sendAll sends n messages from each chosen group's sender, the groups at once.
	sendAll := func(phase string, n int, which func(i int) bool) error {
		var wg sync.WaitGroup
		errs := make([]error, len(chats))
		for i, c := range chats {
			if !which(i) {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := range n {
					id := fmt.Sprintf("%s-%d-%d", phase, i, j)
					if _, err := c.conns[0].Send(ctx, textMessage(c.topic, id, id)); err != nil {
						errs[i] = fmt.Errorf("send %s: %w", id, err)
						return
					}
				}
			}()
			sent[i] += n
		}
		wg.Wait()
		return errors.Join(errs...)
	}
	every := func(int) bool { return true }
	if err := sendAll("before", 5, every); err != nil {
		t.Fatal(err)
	}

	// Another node holds the partition now: its jobs stay queued.
	k := srv.Keys()
	lease := k.DeliverLease(lost, repairPartitions)
	if err := rc.Do(ctx, rc.B().Set().Key(lease).Value("phantom-1").Px(time.Minute).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	queue := k.DeliverQueueOf(lost, repairPartitions)
	processing := k.DeliverProcessingOf(lost, repairPartitions)
	probe := chats[inLost[0]]
	eventually(t, 30*time.Second, "the node gives the partition up", func() bool {
		sendN(t, ctx, probe.conns[0], probe.topic, fmt.Sprintf("probe-%d", sent[inLost[0]]), 1)
		sent[inLost[0]]++
		time.Sleep(200 * time.Millisecond)
		n, err := rc.Do(ctx, rc.B().Llen().Key(queue).Build()).AsInt64()
		return err == nil && n > 0
	})
	if err := sendAll("queued", 5, every); err != nil {
		t.Fatal(err)
	}

	// The loss, under load: the groups of the other partition keep sending meanwhile.
	load := make(chan error, 1)
	go func() {
		load <- sendAll("during", 5, func(i int) bool { return delivery.PartitionOf(chats[i].topic, repairPartitions) != lost })
	}()
	dropped, err := rc.Do(ctx, rc.B().Llen().Key(queue).Build()).AsInt64()
	if err != nil {
		t.Fatal(err)
	}
	if err := rc.Do(ctx, rc.B().Del().Key(queue, processing, lease).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	if err := <-load; err != nil {
		t.Fatal(err)
	}
	t.Logf("deleted %d queued jobs of partition %d", dropped, lost)
	if dropped == 0 {
		t.Fatal("the lost partition held no job")
	}

	// The first group of the lost partition goes on (a gap), the second stops (a tail).
	if err := sendAll("after", 5, func(i int) bool { return i != inLost[1] }); err != nil {
		t.Fatal(err)
	}

	db := srv.TenantDB()
	stored := make([]int64, len(chats))
	for i, c := range chats {
		seqs := srv.SeqsInTable(db, Month(0), c.topic)
		if len(seqs) != sent[i] || seqs[len(seqs)-1] != int64(sent[i]) {
			t.Fatalf("%s: MySQL holds %d messages up to seq %v, %d were acknowledged", c.topic, len(seqs), seqs, sent[i])
		}
		stored[i] = int64(len(seqs))
	}
	for i, c := range chats {
		for _, r := range c.conns[1:] {
			eventually(t, 90*time.Second, fmt.Sprintf("%s converges to MySQL's %d messages", c.topic, stored[i]), func() bool {
				unread, seq := listAt(t, ctx, r, c.topic)
				return unread == stored[i] && seq == stored[i]
			})
		}
	}
	if srv.metricValue("deliver_list_gap_total") <= gapsBefore {
		t.Fatal("deliver_list_gap_total did not rise: the consumer went past the lost jobs unrecorded")
	}
	// The repair counts a message after the lists took it, so the counter can trail them.
	eventually(t, 10*time.Second, fmt.Sprintf("deliver_list_repair_total{repaired} at least the %d lost jobs", dropped), func() bool {
		return srv.metricValue("deliver_list_repair_total", "result", "repaired") >= float64(dropped)
	})
}

// listAt returns the unread count and preview seq of topic in the connection's list.
func listAt(t *testing.T, ctx context.Context, c *client.Conn, topic string) (unread, seq int64) {
	t.Helper()
	d, ok := dialogOf(t, ctx, c, topic)
	if !ok {
		return 0, 0
	}
	var p struct {
		Seq int64 `json:"seq"`
	}
	if len(d.Preview) > 0 {
		if err := json.Unmarshal(d.Preview, &p); err != nil {
			t.Fatal(err)
		}
	}
	return d.Unread, p.Seq
}
