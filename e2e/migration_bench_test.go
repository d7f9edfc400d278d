package e2e

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/mysql/legacygen"
	"github.com/imdhq/imd/clients/go/client"
	"github.com/imdhq/imd/cmd/imctl/adminapi"
)

// BenchmarkShard12Migration1M migrates a 1,000,000-row legacy table through the real binary
// while closed-loop senders keep sending, and reports the copy rate and what the copy costs
// live traffic: SEND_ACK p99 before the migration and while it runs. One run is the whole
// benchmark (use -benchtime=1x -timeout 30m). IMD_MIGRATION_BENCH_ROWS, _BATCH and _RATE (rows/s, 0 = no
// cap) change the size, the batch and the rate limit.
func BenchmarkShard12Migration1M(b *testing.B) {
	rows := envInt(b, "IMD_MIGRATION_BENCH_ROWS", 1_000_000)
	batch := envInt(b, "IMD_MIGRATION_BENCH_BATCH", 5000)
	rate := 0 // no cap
	if os.Getenv("IMD_MIGRATION_BENCH_RATE") != "" {
		rate = envInt(b, "IMD_MIGRATION_BENCH_RATE", 0)
	}
	env := migrationEnv(rate)
	env["IMD_MIGRATION_BATCH_SIZE"] = strconv.Itoa(batch)
	srv := Start(b, Options{Env: env})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	genStart := time.Now()
	sum, err := legacygen.Generate(ctx, srv.TenantDB(), legacygen.Spec{Rows: rows, Groups: 2000, Pairs: 500, IDs: legacyIDs(b)})
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("%d legacy rows in %d topics generated in %s", sum.Rows, len(sum.Topics), time.Since(genStart).Round(time.Second))
	admin := adminapi.New("http://"+srv.HTTPAddr, srv.AdminKey, srv.Tenant, nil)

	// Live traffic on groups of their own, four closed-loop senders.
	const senders = 4
	conns := make([]*client.Conn, senders)
	topics := make([]string, senders)
	for i := range senders {
		owner, member := int64(900_000+2*i), int64(900_001+2*i)
		tok := srv.User(owner)
		srv.User(member)
		topics[i] = srv.Group(int64(90_000+i), owner, member)
		conns[i] = srv.Connect(ctx, tok, 1)
	}
	load := func(until func() bool) (lat []time.Duration, n int) {
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i := range senders {
			wg.Go(func() {
				var mine []time.Duration
				for k := 0; !until() && ctx.Err() == nil; k++ {
					t0 := time.Now()
					if _, err := conns[i].Send(ctx, textMessage(topics[i], fmt.Sprintf("b%d-%d-%d", i, time.Now().UnixNano(), k), "load")); err != nil {
						b.Error(err)
						return
					}
					mine = append(mine, time.Since(t0))
				}
				mu.Lock()
				lat = append(lat, mine...)
				mu.Unlock()
			})
		}
		wg.Wait()
		return lat, len(lat)
	}

	b.ResetTimer()
	deadline := time.Now().Add(10 * time.Second)
	baseline, baseN := load(func() bool { return time.Now().After(deadline) })

	started := time.Now()
	if _, err := admin.MigrationStart(ctx, false); err != nil {
		b.Fatal(err)
	}
	var copyDone time.Time
	var final adminapi.MigrationStatus
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		for ctx.Err() == nil {
			st, err := admin.MigrationStatus(ctx)
			if err != nil {
				b.Error(err)
				return
			}
			if st.Job.CopyDone && copyDone.IsZero() {
				copyDone = time.Now()
			}
			if !st.Job.Running() {
				final = st
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	during, duringN := load(func() bool {
		select {
		case <-stopped:
			return true
		default:
			return false
		}
	})
	<-stopped
	b.StopTimer()
	if final.Job.Phase != "verified" || final.Job.Copied != int64(rows) {
		b.Fatalf("migration ended %+v", final.Job)
	}
	if copyDone.IsZero() {
		copyDone = time.Now()
	}
	copySecs := copyDone.Sub(started).Seconds()
	b.ReportMetric(float64(rows)/copySecs, "copied-rows/s")
	b.ReportMetric(time.Since(started).Seconds(), "start-to-verified-s")
	b.ReportMetric(ms(migrationP99(baseline)), "baseline-ack-p99-ms")
	b.ReportMetric(ms(migrationP99(during)), "migrating-ack-p99-ms")
	b.ReportMetric(float64(baseN)/10, "baseline-acks/s")
	b.ReportMetric(float64(duringN)/time.Since(started).Seconds(), "migrating-acks/s")
}

func migrationP99(lat []time.Duration) time.Duration {
	if len(lat) == 0 {
		return 0
	}
	s := slices.Clone(lat)
	slices.Sort(s)
	return s[len(s)*99/100]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
