package redis

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/imdhq/imd/ports"
	"github.com/imdhq/imd/ports/contract"
)

// The tests need a real Redis: IMD_TEST_REDIS_ADDR (e.g. 127.0.0.1:16379, see
// deploy/local/services.sh). Without it they skip, unless IMD_REQUIRE_SERVICES=1. The contract
// suites also run against the Redis Cluster of IMD_TEST_REDIS_CLUSTER_ADDRS.
type backend struct {
	name string
	env  string // the variable holding its address(es)

	once sync.Once
	c    rueidis.Client
	err  error
}

var (
	single  = &backend{name: "single", env: "IMD_TEST_REDIS_ADDR"}
	cluster = &backend{name: "cluster", env: "IMD_TEST_REDIS_CLUSTER_ADDRS"}
)

func TestMain(m *testing.M) {
	code := m.Run()
	for _, b := range []*backend{single, cluster} {
		if b.c != nil {
			b.c.Close()
		}
	}
	os.Exit(code)
}

// testClient is the single Redis, which the adapter's own tests use.
func testClient(tb testing.TB) rueidis.Client { return single.client(tb) }

// configured reports whether the environment names the backend's address.
func (b *backend) configured() bool { return os.Getenv(b.env) != "" }

func (b *backend) client(tb testing.TB) rueidis.Client {
	tb.Helper()
	addr := os.Getenv(b.env)
	if addr == "" {
		if os.Getenv("IMD_REQUIRE_SERVICES") == "1" {
			tb.Fatalf("%s is not set and IMD_REQUIRE_SERVICES=1", b.env)
		}
		tb.Skipf("%s not set", b.env)
	}
	b.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		b.c, b.err = Open(ctx, addr)
	})
	if b.err != nil {
		tb.Fatalf("open redis %s: %v", b.name, b.err)
	}
	return b.c
}

// onEachRedis runs a contract suite against the single Redis and against the Redis Cluster.
func onEachRedis(t *testing.T, run func(t *testing.T, c rueidis.Client)) {
	for _, b := range []*backend{single, cluster} {
		t.Run(b.name, func(t *testing.T) { run(t, b.client(t)) })
	}
}

// testTenant returns a random tenant name and deletes its keys when the test ends, so tests
// share the server without FLUSHALL. Every master is scanned: on a cluster the tenant's keys
// lie on every master, under its own tag and its slot groups' (DESIGN §11).
func testTenant(tb testing.TB, c rueidis.Client) string {
	tb.Helper()
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	name := "t" + hex.EncodeToString(b)
	tb.Cleanup(func() {
		for addr, node := range c.Nodes() {
			if err := deleteMatching(node, "im:{"+name+"[}~]*"); err != nil {
				tb.Errorf("delete keys of %s on %s: %v", name, addr, err)
			}
		}
	})
	return name
}

func deleteMatching(c rueidis.Client, pattern string) error {
	ctx := context.Background()
	var cursor uint64
	for {
		e, err := c.Do(ctx, c.B().Scan().Cursor(cursor).Match(pattern).Count(1000).Build()).AsScanEntry()
		if err != nil {
			return fmt.Errorf("scan: %w", err)
		}
		// One DEL per key: a node's keys lie in many slots.
		cmds := make(rueidis.Commands, len(e.Elements))
		for i, key := range e.Elements {
			cmds[i] = c.B().Del().Key(key).Build()
		}
		for _, r := range c.DoMulti(ctx, cmds...) {
			if err := r.Error(); err != nil {
				return fmt.Errorf("delete: %w", err)
			}
		}
		if cursor = e.Cursor; cursor == 0 {
			return nil
		}
	}
}

// testFollowUp is the commit follow-up on c with the default queue and hot-cache limits.
func testFollowUp(c rueidis.Client) *CommitFollowUp {
	return NewCommitFollowUp(NewDeliverQueue(c), NewHotCache(c, HotCacheOptions{}))
}

func TestSeqAllocatorContract(t *testing.T) {
	onEachRedis(t, func(t *testing.T, c rueidis.Client) {
		contract.SeqAllocator(t, func(t *testing.T) contract.SeqFixture {
			return contract.SeqFixture{Tenant: testTenant(t, c), Seq: NewSeqAllocator(c, 0), Months: NewMonthState(c), FollowUp: testFollowUp(c)}
		})
	})
}

func TestPendingSeqsContract(t *testing.T) {
	onEachRedis(t, func(t *testing.T, c rueidis.Client) {
		contract.PendingSeqs(t, func(t *testing.T) contract.SeqFixture {
			s := NewSeqAllocator(c, 0)
			return contract.SeqFixture{Tenant: testTenant(t, c), Seq: s, Months: NewMonthState(c), Pending: s, FollowUp: testFollowUp(c)}
		})
	})
}

func TestMonthStateContract(t *testing.T) {
	onEachRedis(t, func(t *testing.T, c rueidis.Client) {
		contract.MonthState(t, func(t *testing.T) contract.MonthFixture {
			return contract.MonthFixture{Tenant: testTenant(t, c), Months: NewMonthState(c)}
		})
	})
}

func TestRouteCacheContract(t *testing.T) {
	onEachRedis(t, func(t *testing.T, c rueidis.Client) {
		contract.RouteCache(t, func(t *testing.T) contract.RouteFixture {
			return contract.RouteFixture{Tenant: testTenant(t, c), Routes: NewRouteCache(c)}
		})
	})
}

func TestDeliverInspectorContract(t *testing.T) {
	onEachRedis(t, func(t *testing.T, c rueidis.Client) { contract.DeliverInspector(t, deliverFixture(c)) })
}

func TestDeliverQueueContract(t *testing.T) {
	onEachRedis(t, func(t *testing.T, c rueidis.Client) { contract.DeliverQueue(t, deliverFixture(c)) })
}

func TestDeliverDepthContract(t *testing.T) {
	onEachRedis(t, func(t *testing.T, c rueidis.Client) { contract.DeliverDepth(t, deliverFixture(c)) })
}

func deliverFixture(c rueidis.Client) func(t *testing.T) contract.DeliverFixture {
	return func(t *testing.T) contract.DeliverFixture {
		q := NewDeliverQueue(c)
		return contract.DeliverFixture{Tenant: testTenant(t, c), Queue: q, Split: func(n int) (ports.DeliverQueue, error) { return q.WithPartitions(n) }}
	}
}
