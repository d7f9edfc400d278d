package redis

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/imdhq/imd/core/domain/delivery"
	"github.com/imdhq/imd/core/domain/dialog"
	"github.com/imdhq/imd/core/domain/presence"
)

// TestListBatchesAreSlotGroups: the deliver workers' batches split users as UserGroup does, so
// a batch's lists change in one script call of one slot group (DESIGN §11).
func TestListBatchesAreSlotGroups(t *testing.T) {
	users := make([]int64, 1000)
	for i := range users {
		users[i] = int64(i*7919 + 1)
	}
	for _, b := range dialog.BatchesOf(users) {
		for _, u := range b.Users {
			if UserGroup(u) != b.Index {
				t.Fatalf("user %d is in batch %d but slot group %d", u, b.Index, UserGroup(u))
			}
		}
	}
}

// TestDialogBatchOverGroupsCountsOnce: a batch whose users live in two slot groups acts in two
// calls, each under its group's marker. A job whose first attempt changed one group's lists
// only (the other call failed) counts, on retry, the other group's users and nobody twice.
func TestDialogBatchOverGroupsCountsOnce(t *testing.T) {
	onEachRedis(t, func(t *testing.T, c rueidis.Client) {
		tenant, ctx := testTenant(t, c), t.Context()
		s := NewDialogStore(c)
		update := func(users ...int64) dialog.Update {
			return dialog.Update{ConversationID: 42, Score: 1000, Sender: 9, Once: "m7", OnceTTL: time.Minute,
				Preview: dialog.Preview{ConversationID: 42, Seq: 1, Type: "text", Text: "hi", From: 9, CreatedAt: 1000},
				Batches: []dialog.Batch{{Index: 1, Users: users}}}
		}
		// Users 1 and 65 are in group 1, user 2 in group 2: the first attempt did group 1 only.
		for i, step := range []struct {
			users []int64
			first bool
		}{{[]int64{1, 65}, true}, {[]int64{1, 2, 65}, true}, {[]int64{1, 2, 65}, false}} {
			got, err := s.Apply(ctx, tenant, update(step.users...))
			if err != nil || len(got) != 1 || got[0].First != step.first {
				t.Fatalf("step %d: Apply = %+v, %v; want first=%v", i, got, err, step.first)
			}
		}
		for _, user := range []int64{1, 2, 65} {
			entries, err := s.Changed(ctx, tenant, user, 0, 10)
			if err != nil || len(entries) != 1 || entries[0].Unread != 1 || entries[0].Preview.Text != "hi" {
				t.Errorf("lists of %d = %+v, %v; want conversation 42 with 1 unread and its preview", user, entries, err)
			}
		}
	})
}

// TestDeliverRequeueDrainsUngroupedLists: jobs in the lists named before the slot groups move
// to their partitions at boot, taken ones first, and their dead letters to group 0's.
func TestDeliverRequeueDrainsUngroupedLists(t *testing.T) {
	onEachRedis(t, func(t *testing.T, c rueidis.Client) {
		tenant, ctx := testTenant(t, c), t.Context()
		k, _ := KeysOf(tenant)
		q, err := NewDeliverQueue(c).WithPartitions(4)
		if err != nil {
			t.Fatal(err)
		}
		job := func(id int64, topic string) string {
			raw, err := json.Marshal(delivery.Job{Tenant: tenant, Kind: delivery.KindRead, MsgID: id, Topic: topic})
			if err != nil {
				t.Fatal(err)
			}
			return string(raw)
		}
		topics := []string{"grp_1", "grp_2", "grp_3", "grp_4", "grp_5"}
		var taken, queued []string
		for i, topic := range topics {
			taken = append(taken, job(int64(i+1), topic))
			queued = append(queued, job(int64(i+10), topic))
		}
		for key, items := range map[string][]string{
			k.UngroupedDeliverProcessingOf(0, 1): taken, k.UngroupedDeliverQueueOf(0, 1): queued,
			k.UngroupedDeliverDead(): {"{dead"},
		} {
			if err := c.Do(ctx, c.B().Rpush().Key(key).Element(items...).Build()).Error(); err != nil {
				t.Fatal(err)
			}
		}
		if n, err := q.RequeueStale(ctx, tenant); err != nil || n != 2*len(topics)+len(topics) {
			// each taken job moves twice: back to its old queue's head, then to its partition
			t.Fatalf("RequeueStale = %d, %v", n, err)
		}
		for _, key := range []string{k.UngroupedDeliverProcessingOf(0, 1), k.UngroupedDeliverQueueOf(0, 1), k.UngroupedDeliverDead()} {
			if got := lrange(t, c, key); len(got) != 0 {
				t.Errorf("%s still holds %q", key, got)
			}
		}
		for i, topic := range topics {
			list := lrange(t, c, k.DeliverQueueOf(delivery.PartitionOf(topic, 4), 4))
			a, b := slices.Index(list, taken[i]), slices.Index(list, queued[i])
			if a < 0 || b < a {
				t.Errorf("partition of %s holds %q: want its taken job, then its queued one", topic, list)
			}
		}
		if got := lrange(t, c, k.DeliverDead(0)); !slices.Equal(got, []string{"{dead"}) {
			t.Errorf("dead letters of group 0 = %q", got)
		}
	})
}

// TestOneTenantsDeliveryLandsOnEveryMaster: on the three-master cluster services.sh starts,
// one tenant's deliver queues, conversation lists and presence spread over every master
// (issue 30, DESIGN §11): each master holds keys of the tenant's slot groups and ran scripts.
func TestOneTenantsDeliveryLandsOnEveryMaster(t *testing.T) {
	c := cluster.client(t)
	tenant, ctx := testTenant(t, c), t.Context()
	masters := c.Nodes()
	if len(masters) < 3 {
		t.Fatalf("the cluster has %d nodes; want 3 masters", len(masters))
	}
	before := map[string]int64{}
	for addr, node := range masters {
		before[addr] = evalCalls(t, node)
	}
	q, err := NewDeliverQueue(c).WithPartitions(SlotGroups) // a partition per group
	if err != nil {
		t.Fatal(err)
	}
	s, nodes := NewDialogStore(c), NewNodes(c)
	var users []int64
	for u := range int64(SlotGroups) {
		users = append(users, 1000+u)
	}
	for i, pushed := 1, map[int]bool{}; len(pushed) < SlotGroups; i++ { // a job in every partition
		topic := "grp_" + strconv.Itoa(i)
		if p := delivery.PartitionOf(topic, SlotGroups); !pushed[p] {
			pushed[p] = true
			if err := q.Push(ctx, delivery.Job{Tenant: tenant, Kind: delivery.KindRead, MsgID: int64(i), Topic: topic}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for p := range SlotGroups {
		if _, err := q.TakeMore(ctx, tenant, p, 100); err != nil {
			t.Fatal(err)
		}
	}
	u := dialog.Update{ConversationID: 5, Score: 1000, Sender: users[0], Once: "m1", OnceTTL: time.Minute,
		Preview: dialog.Preview{ConversationID: 5, Seq: 1}, Batches: dialog.BatchesOf(users)}
	if _, err := s.Apply(ctx, tenant, u); err != nil {
		t.Fatal(err)
	}
	for _, user := range users {
		if _, _, err := nodes.Claim(ctx, tenant, presence.Entry{User: user, Device: 1, Node: "1-aa", Token: 1}); err != nil {
			t.Fatal(err)
		}
	}
	for addr, node := range masters {
		held := map[string]bool{}
		for _, key := range scanKeys(t, node, "im:{"+tenant+"~*") {
			_, name, _ := strings.Cut(key, "}:")
			for _, kind := range []string{"deliver:processing:", "dialog:unread:", "presence:"} {
				held[kind] = held[kind] || strings.HasPrefix(name, kind)
			}
		}
		for kind, ok := range held {
			if !ok {
				t.Errorf("master %s holds no %s key of the tenant", addr, kind)
			}
		}
		if calls := evalCalls(t, node) - before[addr]; calls <= 0 {
			t.Errorf("master %s ran no script for the tenant", addr)
		}
	}
}

// evalCalls is the EVAL and EVALSHA calls a server has run (INFO commandstats).
func evalCalls(t *testing.T, c rueidis.Client) int64 {
	t.Helper()
	info, err := c.Do(t.Context(), c.B().Info().Section("commandstats").Build()).ToString()
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, line := range strings.Split(info, "\n") {
		name, stats, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || (name != "cmdstat_evalsha" && name != "cmdstat_eval") {
			continue
		}
		var calls int64
		if _, err := fmt.Sscanf(stats, "calls=%d", &calls); err != nil {
			t.Fatalf("commandstats line %q: %v", line, err)
		}
		n += calls
	}
	return n
}

func scanKeys(t *testing.T, c rueidis.Client, pattern string) []string {
	t.Helper()
	var (
		out    []string
		cursor uint64
	)
	for {
		e, err := c.Do(t.Context(), c.B().Scan().Cursor(cursor).Match(pattern).Count(1000).Build()).AsScanEntry()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e.Elements...)
		if cursor = e.Cursor; cursor == 0 {
			return out
		}
	}
}
