package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/imdhq/imd/clients/go/client"
)

// A month switch with nodes racing on the real clock path (seed 000 §12 item 15, issue 14
// item 7): nothing calls the admin advance; the seq script and the shard manager read Redis
// TIME, and that Redis's clock crosses a month boundary while clients of three nodes send.
//
// Redis runs under datefudge (deploy/local/services.sh installs it), which shifts the
// realtime clock of the unmodified Debian redis-server by LD_PRELOAD and lets it run.
// libfaketime, the usual tool, cannot start this redis-server: the binary links jemalloc,
// whose initialisation calls clock_gettime while libfaketime is still resolving its own
// symbols, and libfaketime gives up with "Unexpected recursive calls to clock_gettime()"
// (libfaketime issues #130, #327; unfixed). The imd nodes keep the real clock of the machine
// (Go reads time through the vDSO, no LD_PRELOAD reaches it), so they run days away from
// Redis: the month of a message must come from Redis TIME only, whatever the node clocks say.

// fakeClockRedis is a private redis-server whose clock started at a chosen time.
type fakeClockRedis struct {
	addr string
	c    rueidis.Client
}

// startRedisAt starts a private redis-server (no persistence) whose clock reads start now and
// runs on from there, and checks that both TIME and a Lua script's TIME see it.
func startRedisAt(t *testing.T, start time.Time) *fakeClockRedis {
	t.Helper()
	fudge, err := exec.LookPath("datefudge")
	if err != nil {
		if os.Getenv("IMD_REQUIRE_SERVICES") == "1" {
			t.Fatal("datefudge is missing: run deploy/local/services.sh up, which installs it")
		}
		t.Skip("datefudge not installed (deploy/local/services.sh up installs it)")
	}
	addr := freeAddr(t)
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(fudge, "@"+strconv.FormatInt(start.Unix(), 10),
		"redis-server", "--bind", "127.0.0.1", "--port", port, "--save", "", "--appendonly", "no", "--dir", t.TempDir())
	logs := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("start redis-server under datefudge: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill() // datefudge execs redis-server: this is the server
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("fake-clock redis log tail:\n%s", logs.tail(2000))
		}
	})
	var c rueidis.Client
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err = rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true, ForceSingleClient: true})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("fake-clock redis at %s: %v\n%s", addr, err, logs.tail(2000))
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Cleanup(c.Close)
	r := &fakeClockRedis{addr: addr, c: c}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	viaLua, err := c.Do(ctx, c.B().Eval().Script("local t = redis.call('TIME') return t[1]").Numkeys(0).Build()).AsInt64()
	if err != nil {
		t.Fatalf("Lua TIME: %v", err)
	}
	for name, got := range map[string]time.Time{"TIME": r.now(t), "Lua TIME": time.Unix(viaLua, 0)} {
		if d := got.Sub(start); d < -time.Second || d > 10*time.Second {
			t.Fatalf("%s of the fake-clock redis says %v, want about %v: the clock is not shifted", name, got.UTC(), start)
		}
	}
	return r
}

// now is the Redis clock.
func (r *fakeClockRedis) now(t *testing.T) time.Time {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	v, err := r.c.Do(ctx, r.c.B().Time().Build()).AsStrSlice()
	if err != nil || len(v) != 2 {
		t.Errorf("redis TIME: %v %v", v, err)
		return time.Time{}
	}
	sec, _ := strconv.ParseInt(v[0], 10, 64)
	usec, _ := strconv.ParseInt(v[1], 10, 64)
	return time.Unix(sec, usec*1000).UTC()
}

// sentAt is one ACKed send and the Redis clock just before it was sent and just after its ACK.
type sentAt struct {
	seq           int64
	before, after time.Time
}

// TestNodesMonthSwitchOnTheRedisClock: three nodes, six members spread over them, every member
// sending without pause from three seconds before the Redis clock's month boundary to three
// seconds after it. Every ACKed message is stored once, in the month its allocation saw (a send
// ACKed before the boundary in the old month's table, one sent after it in the new month's);
// seqs are 1..N with no reuse and rise for each sender; the old month's seqs all precede the
// new month's (segments do not overlap, route mirror included); the active month, watched all
// along, only moves forward and ends in the new month; every member receives every message of
// the others live exactly once, in seq order.
func TestNodesMonthSwitchOnTheRedisClock(t *testing.T) {
	// The boundary after the real date, so the node clocks stay weeks behind Redis; 75 s of
	// lead leave time to start three nodes and connect before the sends begin.
	wall := time.Now().UTC()
	boundary := time.Date(wall.Year(), wall.Month()+1, 1, 0, 0, 0, 0, time.UTC)
	const lead, span = 75 * time.Second, 3 * time.Second
	redis := startRedisAt(t, boundary.Add(-lead))
	oldMonth, newMonth := boundary.Add(-time.Second).Format("200601"), boundary.Format("200601")

	nodes := startNodes(t, 3, map[string]string{"IMD_REDIS_ADDR": redis.addr})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const members = 6
	ids := make([]int64, members)
	tokens := make([]string, members)
	for i := range ids {
		ids[i] = int64(300 + i)
		tokens[i] = nodes[0].User(ids[i])
	}
	topic := nodes[0].Group(16, ids[0], ids[1:]...)
	conns := make([]*client.Conn, members)
	for i := range conns {
		conns[i] = nodes[i%len(nodes)].Connect(ctx, tokens[i], 1)
	}
	if got := nodes[0].ActiveMonth(redis.c); got != oldMonth {
		t.Fatalf("active month %s before the boundary, want %s", got, oldMonth)
	}

	var mu sync.Mutex
	received := make([][]int64, members)
	for i, c := range conns { // drained until the connection closes at cleanup
		go func() {
			for p := range c.Pushes() {
				if p.Message != nil && p.Message.Topic == topic {
					mu.Lock()
					received[i] = append(received[i], p.Message.Seq)
					mu.Unlock()
				}
			}
		}()
	}

	// The active month, watched from before the first send to after the last.
	watchDone, watched := make(chan struct{}), make(chan []string, 1)
	go func() {
		var seen []string
		for {
			m := nodes[0].ActiveMonth(redis.c)
			if len(seen) == 0 || seen[len(seen)-1] != m {
				seen = append(seen, m)
			}
			select {
			case <-watchDone:
				watched <- seen
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()

	if at := redis.now(t); at.After(boundary.Add(-span)) {
		t.Fatalf("setup took too long: the Redis clock is at %v already, the sends must begin before %v", at, boundary.Add(-span))
	}
	for redis.now(t).Before(boundary.Add(-span)) {
		time.Sleep(20 * time.Millisecond)
	}
	sent := make([][]sentAt, members)
	var senders sync.WaitGroup
	for i, c := range conns {
		senders.Add(1)
		go func() {
			defer senders.Done()
			for j := 0; ; j++ {
				before := redis.now(t)
				if before.After(boundary.Add(span)) {
					return
				}
				ack, err := c.Send(ctx, textMessage(topic, fmt.Sprintf("m%d-%d", i, j), "x"))
				if err != nil {
					t.Errorf("sender %d on node %d, send %d: %v", i, i%len(nodes)+1, j, err)
					return
				}
				sent[i] = append(sent[i], sentAt{seq: ack.Seq, before: before, after: redis.now(t)})
			}
		}()
	}
	senders.Wait()
	close(watchDone)
	if t.Failed() {
		return
	}

	var all []int64
	inOld, inNew := map[int64]bool{}, map[int64]bool{}
	db := nodes[0].TenantDB()
	for _, s := range nodes[0].SeqsInTable(db, oldMonth, topic) {
		inOld[s] = true
	}
	for _, s := range nodes[0].SeqsInTable(db, newMonth, topic) {
		inNew[s] = true
	}
	ackedBefore, sentAfter := 0, 0
	for i, mine := range sent {
		for k, s := range mine {
			all = append(all, s.seq)
			if k > 0 && s.seq <= mine[k-1].seq {
				t.Errorf("sender %d: seq %d after %d (rolled back)", i, s.seq, mine[k-1].seq)
			}
			switch {
			case inOld[s.seq] == inNew[s.seq]:
				t.Errorf("seq %d stored in both or neither month (old %v, new %v)", s.seq, inOld[s.seq], inNew[s.seq])
			case s.after.Before(boundary):
				ackedBefore++
				if !inOld[s.seq] {
					t.Errorf("seq %d ACKed at Redis %v, before the boundary, is in %s", s.seq, s.after, newMonth)
				}
			case !s.before.Before(boundary):
				sentAfter++
				if !inNew[s.seq] {
					t.Errorf("seq %d sent at Redis %v, after the boundary, is in %s", s.seq, s.before, oldMonth)
				}
			}
		}
	}
	slices.Sort(all)
	n := int64(len(all))
	if !slices.Equal(all, seqRange(1, n)) {
		t.Fatalf("seqs reused or skipped across nodes: %d ACKs, %v…", n, all[:min(len(all), 20)])
	}
	if ackedBefore == 0 || sentAfter == 0 {
		t.Fatalf("the sends did not straddle the boundary: %d ACKed before, %d sent after", ackedBefore, sentAfter)
	}
	if len(inOld)+len(inNew) != len(all) {
		t.Errorf("the month tables hold %d+%d rows of the topic, %d ACKed", len(inOld), len(inNew), len(all))
	}
	for _, m := range []string{boundary.AddDate(0, -1, -1).Format("200601"), boundary.AddDate(0, 1, 0).Format("200601")} {
		if got := nodes[0].SeqsInTable(db, m, topic); len(got) > 0 {
			t.Errorf("month %s holds seqs %v of the topic", m, got)
		}
	}
	for s := range inNew {
		for o := range inOld {
			if o >= s {
				t.Fatalf("month segments overlap: %s has seq %d, %s has seq %d", oldMonth, o, newMonth, s)
			}
		}
	}
	mirror := nodes[0].Mirror(db, topic)
	var mirrored int64
	for i, g := range mirror {
		mirrored += g.Count
		if i > 0 && g.MinSeq <= mirror[i-1].MaxSeq {
			t.Errorf("route mirror segments overlap: %+v", mirror)
		}
	}
	if mirrored != n {
		t.Errorf("route mirror counts %d rows, %d ACKed: %+v", mirrored, n, mirror)
	}
	if got := <-watched; !slices.Equal(got, []string{oldMonth, newMonth}) {
		t.Errorf("active month went %v, want %s then %s only", got, oldMonth, newMonth)
	}

	// Live delivery: each member gets every other member's messages once, in seq order. Once
	// the queue drained, a last message from the first member's second device reaches every
	// connection after whatever the earlier jobs pushed to it (a device gets a topic's pushes in
	// seq order), so a member whose pushes end with it has all it will get of the others.
	deliveryDrained(t, nodes[0], time.Minute)
	last, err := nodes[0].Connect(ctx, tokens[0], 2).Send(ctx, textMessage(topic, "last", "x"))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for i := range conns {
		mine := map[int64]bool{}
		for _, s := range sent[i] {
			mine[s.seq] = true
		}
		var want []int64
		for _, s := range all {
			if !mine[s] {
				want = append(want, s)
			}
		}
		want = append(want, last.Seq)
		for {
			mu.Lock()
			got := slices.Clone(received[i])
			mu.Unlock()
			if len(got) >= len(want) || time.Now().After(deadline) {
				if !slices.Equal(got, want) {
					t.Errorf("member %d on node %d got %d pushes, want %d, once each in seq order", i, i%len(nodes)+1, len(got), len(want))
				}
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	t.Logf("%d messages from %d senders on %d nodes, %d ACKed before the boundary, %d sent after it", n, members, len(nodes), ackedBefore, sentAfter)
}
