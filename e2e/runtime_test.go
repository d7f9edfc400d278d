package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/imdhq/imd/adapters/redis"
)

// TestATenantLoopThatFailsIsRestartedAndHeals: imd starts on a tenant whose deliver
// partition record in Redis was overwritten with a value of the wrong type, so its deliver
// loop fails at start (WRONGTYPE). The runtime logs it, counts it in
// tenant_loop_restarts_total and tries again with backoff; once the key is gone the loop
// starts and the node delivers.
func TestATenantLoopThatFailsIsRestartedAndHeals(t *testing.T) {
	svc := RequireServices(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tenant := "e2e_" + randomHex(6)
	keys, err := redis.KeysOf(tenant)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: strings.Split(svc.RedisAddr, ","), DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	corrupt := keys.DeliverPartitions()
	if err := rc.Do(ctx, rc.B().Set().Key(corrupt).Value("not a set").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dropDatabase(svc.MySQLDSN, "imd_"+tenant) })
	srv := Start(t, Options{Tenant: tenant})
	eventually(t, 30*time.Second, "tenant_loop_restarts_total{loop=deliver} rises", func() bool {
		return srv.metricValue("tenant_loop_restarts_total", "loop", "deliver", "tenant", tenant) > 0
	})
	if !transportLogContains(srv, "tenant loop failed; restarting") {
		t.Fatal("the failure is not logged")
	}

	if err := rc.Do(ctx, rc.B().Del().Key(corrupt).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	// Healed: the loop's next try records the partitions again.
	eventually(t, 60*time.Second, "the deliver loop starts after the key is gone", func() bool {
		n, err := rc.Do(ctx, rc.B().Scard().Key(corrupt).Build()).AsInt64()
		return err == nil && n > 0
	})
	const a, b = 421, 422
	aToken, bToken := srv.User(a), srv.User(b)
	topic := srv.Group(42, a, b)
	sender, receiver := srv.Connect(ctx, aToken, 1), srv.Connect(ctx, bToken, 1)
	ack, err := sender.Send(ctx, textMessage(topic, "after-heal", "delivered"))
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := transportNextPush(t, receiver, 30*time.Second); !ok || p.Message == nil || p.Message.Seq != ack.Seq {
		t.Fatalf("push %+v, want seq %d", p, ack.Seq)
	}
}
