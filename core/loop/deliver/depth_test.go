package deliver_test

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/memory"
	"github.com/imdhq/imd/core/domain/delivery"
	"github.com/imdhq/imd/core/loop/deliver"
)

func TestDepthGaugesReportBacklogAndLagPerPartition(t *testing.T) {
	clock := memory.NewClock(time.Date(2026, 5, 14, 10, 0, 0, 0, time.UTC))
	q, err := memory.NewDeliverQueue(clock.Now).WithPartitions(2)
	if err != nil {
		t.Fatal(err)
	}
	metrics := memory.NewMetrics()
	g := deliver.DepthGauges{Depth: q, Metrics: metrics, Clock: clock, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	const tenant = "acme"
	busy := delivery.PartitionOf("grp_1", 2)
	idle := strconv.Itoa(1 - busy)
	for n := range 3 {
		if err := q.Push(t.Context(), delivery.Job{Tenant: tenant, Kind: delivery.KindMessage, MsgID: int64(n + 1), Topic: "grp_1"}); err != nil {
			t.Fatal(err)
		}
		clock.Advance(time.Second)
	}
	if _, ok, err := q.Take(t.Context(), tenant, busy, 0); err != nil || !ok {
		t.Fatalf("Take = %v, %v", ok, err)
	}
	clock.Advance(7 * time.Second)

	g.Sample(t.Context(), tenant)
	for _, c := range []struct {
		metric    string
		partition string
		want      float64
	}{
		{"deliver_queue_depth", strconv.Itoa(busy), 2},
		{"deliver_processing_depth", strconv.Itoa(busy), 1},
		{"deliver_queue_lag_seconds", strconv.Itoa(busy), 9}, // job 2, queued 1 s after the start, 10 s ago
		{"deliver_queue_depth", idle, 0},
		{"deliver_queue_lag_seconds", idle, 0},
	} {
		if got := metrics.Count(c.metric, tenant, c.partition); got != c.want {
			t.Errorf("%s{partition %s} = %v, want %v", c.metric, c.partition, got, c.want)
		}
	}
}

// TestDepthGaugesSampleATenantProvisionedWhileRunning: Run asks for the tenants at every
// sample, so one provisioned after the start is sampled without a restart.
func TestDepthGaugesSampleATenantProvisionedWhileRunning(t *testing.T) {
	clock := memory.NewClock(time.Date(2026, 5, 14, 10, 0, 0, 0, time.UTC))
	q := memory.NewDeliverQueue(clock.Now)
	metrics := memory.NewMetrics()
	g := deliver.DepthGauges{Depth: q, Metrics: metrics, Clock: clock, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if err := q.Push(t.Context(), delivery.Job{Tenant: "late", Kind: delivery.KindMessage, MsgID: 1, Topic: "grp_1"}); err != nil {
		t.Fatal(err)
	}
	asked := make(chan struct{}, 100)
	var calls int
	tenants := func() []string {
		calls++
		asked <- struct{}{}
		if calls < 3 {
			return []string{"early"}
		}
		return []string{"early", "late"}
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); g.Run(ctx, tenants, time.Millisecond) }()
	for range 4 { // the fourth ask comes after the third sample, which had "late"
		select {
		case <-asked:
		case <-time.After(10 * time.Second):
			t.Fatal("Run stopped asking for the tenants")
		}
	}
	cancel()
	<-done
	if got := metrics.Count("deliver_queue_depth", "late", "0"); got != 1 {
		t.Fatalf("deliver_queue_depth of the tenant provisioned while running = %v, want 1", got)
	}
}
