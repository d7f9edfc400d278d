package redis

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/imdhq/imd/ports"
	"github.com/imdhq/imd/ports/contract"
)

// The tests need a real Redis: IMD_TEST_REDIS_ADDR (e.g. 127.0.0.1:16379, see
// deploy/local/services.sh). Without it they skip, unless IMD_REQUIRE_SERVICES=1.
var shared struct {
	once sync.Once
	c    rueidis.Client
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.c != nil {
		shared.c.Close()
	}
	os.Exit(code)
}

func testClient(tb testing.TB) rueidis.Client {
	tb.Helper()
	addr := os.Getenv("IMD_TEST_REDIS_ADDR")
	if addr == "" {
		if os.Getenv("IMD_REQUIRE_SERVICES") == "1" {
			tb.Fatal("IMD_TEST_REDIS_ADDR is not set and IMD_REQUIRE_SERVICES=1")
		}
		tb.Skip("IMD_TEST_REDIS_ADDR not set")
	}
	shared.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		shared.c, shared.err = Open(ctx, addr)
	})
	if shared.err != nil {
		tb.Fatalf("open redis: %v", shared.err)
	}
	return shared.c
}

// testTenant returns a random tenant name and deletes its keys when the test ends, so tests
// share the server without FLUSHALL.
func testTenant(tb testing.TB, c rueidis.Client) string {
	tb.Helper()
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	name := "t" + hex.EncodeToString(b)
	tb.Cleanup(func() {
		ctx := context.Background()
		var cursor uint64
		for {
			e, err := c.Do(ctx, c.B().Scan().Cursor(cursor).Match("im:{"+name+"}:*").Count(1000).Build()).AsScanEntry()
			if err != nil {
				tb.Errorf("scan keys of %s: %v", name, err)
				return
			}
			if len(e.Elements) > 0 {
				if err := c.Do(ctx, c.B().Del().Key(e.Elements...).Build()).Error(); err != nil {
					tb.Errorf("delete keys of %s: %v", name, err)
				}
			}
			if cursor = e.Cursor; cursor == 0 {
				return
			}
		}
	})
	return name
}

func TestSeqAllocatorContract(t *testing.T) {
	contract.SeqAllocator(t, func(t *testing.T) contract.SeqFixture {
		c := testClient(t)
		return contract.SeqFixture{Tenant: testTenant(t, c), Seq: NewSeqAllocator(c, 0), Months: NewMonthState(c)}
	})
}

func TestMonthStateContract(t *testing.T) {
	contract.MonthState(t, func(t *testing.T) contract.MonthFixture {
		c := testClient(t)
		return contract.MonthFixture{Tenant: testTenant(t, c), Months: NewMonthState(c)}
	})
}

func TestRouteCacheContract(t *testing.T) {
	contract.RouteCache(t, func(t *testing.T) contract.RouteFixture {
		c := testClient(t)
		return contract.RouteFixture{Tenant: testTenant(t, c), Routes: NewRouteCache(c)}
	})
}

func TestDeliverInspectorContract(t *testing.T) { contract.DeliverInspector(t, deliverFixture) }

func TestDeliverQueueContract(t *testing.T) { contract.DeliverQueue(t, deliverFixture) }

func TestDeliverDepthContract(t *testing.T) { contract.DeliverDepth(t, deliverFixture) }

func deliverFixture(t *testing.T) contract.DeliverFixture {
	c := testClient(t)
	q := NewDeliverQueue(c)
	return contract.DeliverFixture{Tenant: testTenant(t, c), Queue: q, Split: func(t *testing.T, n int) ports.DeliverQueue {
		split, err := q.WithPartitions(n)
		if err != nil {
			t.Fatal(err)
		}
		return split
	}}
}
