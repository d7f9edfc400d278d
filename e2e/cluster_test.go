package e2e

// Redis Cluster (issue 14 item 5): imd on the three-master cluster services.sh starts, and one
// master killed during sends on a cluster of the test's own.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
)

// RequireRedisCluster returns the addresses of services.sh's Redis Cluster, comma-separated
// as redis.addr takes them; it skips the test when they are absent unless
// IMD_REQUIRE_SERVICES=1.
func RequireRedisCluster(t testing.TB) string {
	t.Helper()
	RequireServices(t)
	addrs := os.Getenv("IMD_TEST_REDIS_CLUSTER_ADDRS")
	if addrs == "" {
		if os.Getenv("IMD_REQUIRE_SERVICES") == "1" {
			t.Fatal("IMD_TEST_REDIS_CLUSTER_ADDRS is required")
		}
		t.Skip("no Redis Cluster configured; run `go tool task test`")
	}
	return addrs
}

func TestRedisClusterSendDeliverSyncAndMonthSwitch(t *testing.T) {
	srv := Start(t, Options{Env: map[string]string{"IMD_REDIS_ADDR": RequireRedisCluster(t)}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := newChat(t, srv, ctx, 1401, 3, 3)

	sendAndDeliver := func(prefix string, from, to int64) {
		t.Helper()
		acks := sendN(t, ctx, c.conns[0], c.topic, prefix, int(to-from+1))
		for i, ack := range acks {
			if ack.Seq != from+int64(i) {
				t.Fatalf("%s-%d ACKed with seq %d; want %d", prefix, i, ack.Seq, from+int64(i))
			}
		}
		for i, member := range c.conns[1:] {
			got := collectMessages(t, member, len(acks), 30*time.Second)
			for seq := from; seq <= to; seq++ {
				if got[seq] != 1 {
					t.Fatalf("member %d got seq %d %d times (pushes %v)", i+1, seq, got[seq], got)
				}
			}
		}
	}
	sendAndDeliver("before", 1, 10)
	if got := srv.Advance(Month(1)); got != Month(1) {
		t.Fatalf("active month %s after advance", got)
	}
	sendAndDeliver("after", 11, 20)

	msgs, fin, err := c.conns[2].SyncMessages(ctx, c.topic, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(seqsOf(msgs), seqRange(1, 20)) || fin.HasMore || fin.LastSeq != 20 {
		t.Fatalf("sync from 0: seqs %v, finish %+v", seqsOf(msgs), fin)
	}
	db := srv.TenantDB()
	if got := srv.SeqsInTable(db, Month(0), c.topic); !slices.Equal(got, seqRange(1, 10)) {
		t.Fatalf("current month holds %v", got)
	}
	if got := srv.SeqsInTable(db, Month(1), c.topic); !slices.Equal(got, seqRange(11, 20)) {
		t.Fatalf("next month holds %v", got)
	}
	if got := srv.ActiveMonth(srv.Redis()); got != Month(1) {
		t.Fatalf("the cluster holds active month %s; want %s", got, Month(1))
	}
}

// TestRedisClusterOneTenantsDeliveryLandsOnEveryMaster: one tenant's delivery (the conversation
// lists of a group of 70, the deliver lists and leases, presence) runs on every master of the
// cluster (issue 30, DESIGN §11): each holds grouped keys of the tenant and ran its scripts.
func TestRedisClusterOneTenantsDeliveryLandsOnEveryMaster(t *testing.T) {
	addrs := RequireRedisCluster(t)
	srv := Start(t, Options{Env: map[string]string{"IMD_REDIS_ADDR": addrs}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	masters := map[string]rueidis.Client{}
	for _, addr := range strings.Split(addrs, ",") {
		c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, ForceSingleClient: true, DisableCache: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		masters[addr] = c
	}
	scripts := func() map[string]int64 {
		out := map[string]int64{}
		for addr, c := range masters {
			info, err := c.Do(ctx, c.B().Info().Section("commandstats").Build()).ToString()
			if err != nil {
				t.Fatal(err)
			}
			for _, line := range strings.Split(info, "\n") {
				if stats, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_evalsha:calls="); ok {
					n, _ := strconv.ParseInt(stats[:strings.IndexByte(stats, ',')], 10, 64)
					out[addr] += n
				}
			}
		}
		return out
	}
	before := scripts()

	c := newChat(t, srv, ctx, 1402, 70, 3)
	acks := sendN(t, ctx, c.conns[0], c.topic, "spread", 5)
	for i, member := range c.conns[1:] {
		if got := collectMessages(t, member, len(acks), 30*time.Second); len(got) != len(acks) {
			t.Fatalf("member %d got %v", i+1, got)
		}
	}
	rc := srv.Redis()
	for _, member := range []int64{1402*10_000 + 4, 1402*10_000 + 70} { // offline members
		eventually(t, 30*time.Second, "an offline member's list counts the sends", func() bool {
			return unreadOf(srv, rc, member, c.topic) == int64(len(acks))
		})
	}

	after := scripts()
	for addr, c := range masters {
		keys, err := c.Do(ctx, c.B().Keys().Pattern("im:{"+srv.Tenant+"~*").Build()).AsStrSlice()
		if err != nil {
			t.Fatal(err)
		}
		if len(keys) == 0 {
			t.Errorf("master %s holds no key of the tenant's slot groups", addr)
		}
		if after[addr] <= before[addr] {
			t.Errorf("master %s ran no script (%d EVALSHA before and after)", addr, after[addr])
		}
	}
}

// TestRedisClusterMasterKilledDuringSendsLosesNoAckedMessage kills -9 the master holding the
// first topic's slot group while senders run, restarts it (it replays its AOF; the cluster has no
// replicas, see README), and reads everything back: every ACKed message stored once with its
// seq and msg_id, no seq ACKed twice. Sends fail while the master is down, with 50301 or a
// timeout, never with an ACK that is then lost.
func TestRedisClusterMasterKilledDuringSendsLosesNoAckedMessage(t *testing.T) {
	svc := RequireServices(t)
	pc := startPrivateCluster(t)
	srv := Start(t, Options{Env: map[string]string{"IMD_REDIS_ADDR": pc.addrs()}})
	const groups = 3
	senders := make([]*faultSender, groups)
	for g := range groups {
		owner, member := int64(1_410_000+2*g), int64(1_410_001+2*g)
		tok := srv.User(owner)
		srv.User(member)
		senders[g] = &faultSender{topic: srv.Group(int64(1410+g), owner, member), token: tok, user: owner}
	}
	// The master of the first topic's slot group: its seq counter and its group's month state.
	victim := pc.masterOf(t, srv.topicKeys(senders[0].topic).Seq(senders[0].topic))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	stop := make(chan struct{})
	var running sync.WaitGroup
	for _, s := range senders {
		running.Go(func() { s.run(ctx, func() string { return srv.TCPAddr }, stop) })
	}
	ackedCount := func() int {
		n := 0
		for _, s := range senders {
			s.mu.Lock()
			n += len(s.acks)
			s.mu.Unlock()
		}
		return n
	}
	eventually(t, time.Minute, "sends ACKed before the fault", func() bool { return ackedCount() >= 30 })

	before := ackedCount()
	killed := time.Now()
	kill9(t, pc.pidFile(victim))
	// Sends meet a master that is gone for a while (the others keep serving their slots).
	time.Sleep(2 * time.Second)
	pc.services("cluster-up")
	restarted := time.Now()
	eventually(t, 2*time.Minute, "sends flowing after the master's restart", func() bool {
		for _, s := range senders {
			if s.firstAckAfter(restarted) < 0 {
				return false
			}
		}
		return true
	})
	after := ackedCount()
	eventually(t, time.Minute, "more sends after the restart", func() bool { return ackedCount() >= after+30 })
	close(stop)
	running.Wait()

	all, busy, other := gather(senders)
	checkAcked(t, svc.MySQLDSN, srv.Tenant, all)
	t.Logf("master 127.0.0.1:%d killed after %d ACKs, down %v; %d ACKed in all, %d answers of 50301, %d other failed attempts",
		victim, before, restarted.Sub(killed).Round(time.Millisecond), len(all), busy, other)
}

// privateCluster is a Redis Cluster of one test, started by services.sh cluster-up under the
// test's own state directory.
type privateCluster struct {
	t    *testing.T
	dir  string
	base int // IMD_REDIS_PORT: the masters listen on base+1..3
}

func startPrivateCluster(t *testing.T) *privateCluster {
	t.Helper()
	p := &privateCluster{t: t, dir: t.TempDir(), base: freeClusterBase(t)}
	p.services("cluster-up")
	t.Cleanup(func() { p.services("cluster-down") })
	return p
}

func (p *privateCluster) services(verb string) {
	p.t.Helper()
	runServices(p.t, verb, "IMD_STATE_DIR="+p.dir, "IMD_REDIS_PORT="+strconv.Itoa(p.base))
}

func (p *privateCluster) ports() []int { return []int{p.base + 1, p.base + 2, p.base + 3} }

func (p *privateCluster) addrs() string {
	var out []string
	for _, port := range p.ports() {
		out = append(out, "127.0.0.1:"+strconv.Itoa(port))
	}
	return strings.Join(out, ",")
}

func (p *privateCluster) pidFile(port int) string {
	return filepath.Join(p.dir, "redis-cluster", strconv.Itoa(port), "redis.pid")
}

// masterOf is the port of the master serving key's slot, from each master's own CLUSTER NODES
// line ("myself"), whose fields after the eighth are its slot ranges.
func (p *privateCluster) masterOf(t *testing.T, key string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, port := range p.ports() {
		c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{"127.0.0.1:" + strconv.Itoa(port)}, ForceSingleClient: true, DisableCache: true})
		if err != nil {
			t.Fatal(err)
		}
		slot, err := c.Do(ctx, c.B().ClusterKeyslot().Key(key).Build()).AsInt64()
		if err != nil {
			c.Close()
			t.Fatalf("CLUSTER KEYSLOT: %v", err)
		}
		nodes, err := c.Do(ctx, c.B().ClusterNodes().Build()).ToString()
		c.Close()
		if err != nil {
			t.Fatalf("CLUSTER NODES: %v", err)
		}
		for line := range strings.SplitSeq(nodes, "\n") {
			fields := strings.Fields(line)
			if len(fields) < 9 || !strings.Contains(fields[2], "myself") {
				continue
			}
			for _, r := range fields[8:] {
				lo, hi, found := strings.Cut(r, "-")
				if !found {
					hi = lo
				}
				from, err1 := strconv.ParseInt(lo, 10, 64)
				to, err2 := strconv.ParseInt(hi, 10, 64)
				if err1 == nil && err2 == nil && from <= slot && slot <= to {
					return port
				}
			}
		}
	}
	t.Fatalf("no master serves the slot of %s", key)
	return 0
}

// freeClusterBase picks a base port whose three master ports and their cluster bus ports
// (10000 above) are all free now.
func freeClusterBase(t *testing.T) int {
	t.Helper()
	for range 50 {
		base := 20000 + rand.IntN(1000)*10
		free := true
		for _, port := range []int{base + 1, base + 2, base + 3, base + 10001, base + 10002, base + 10003} {
			l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
			if err != nil {
				free = false
				break
			}
			l.Close()
		}
		if free {
			return base
		}
	}
	t.Fatal("no free ports for a private Redis Cluster")
	return 0
}
