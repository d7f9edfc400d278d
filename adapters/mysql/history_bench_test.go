package mysql

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/memory"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/shard"
	"github.com/imdhq/imd/core/usecase/history"
)

// BenchmarkHistoryPage measures GET_HISTORY's work below the transport (DESIGN §10 W5): a
// 50-message page read from the month tables by core/usecase/history, within one month and spanning
// two. The route comes from an in-memory route cache and the hot cache is off, so every page
// reads MySQL. Each month table also holds other topics' rows, so the index is not trivially
// small. Reports ns/op and the p99 of single pages.
func BenchmarkHistoryPage(b *testing.B) {
	const (
		perMonth    = 200 // messages of the read topic in each month
		otherTopics = 100 // topics sharing the tables, perMonth messages each per month
		pageSize    = 50
	)
	c, tenant := newTestCluster(b)
	ctx := context.Background()
	months := []month.Month{testMonth, testMonth.Next()}
	shards := NewShardStore(c)
	for _, m := range months {
		if err := shards.EnsureTable(ctx, tenant, m); err != nil {
			b.Fatal(err)
		}
		if err := shards.SetState(ctx, tenant, m, shard.Prepared, shard.Writable); err != nil {
			b.Fatal(err)
		}
	}
	s := NewMessageStore(c, MessageStoreOptions{})
	defer s.Close()
	fill := func(topicName string, firstID int64) error {
		for i := range 2 * perMonth {
			sq := int64(i + 1)
			m := testMessage(topicName, sq, firstID+sq)
			m.Month = months[i/perMonth]
			m.CreatedAt = m.Month.Start().Add(time.Duration(sq) * time.Second)
			if _, err := s.Append(ctx, tenant, m, "h"); err != nil {
				return err
			}
		}
		return nil
	}
	var wg sync.WaitGroup
	errs := make(chan error, otherTopics+1)
	for i := range otherTopics + 1 {
		wg.Go(func() { errs <- fill(fmt.Sprintf("grp_%d", i+1), int64(i)*10_000) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}

	clock := memory.NewClock(months[1].Start())
	state := memory.NewMonthState(clock.Now)
	for _, m := range months {
		if err := state.MarkReady(ctx, tenant, 0, m); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := state.Advance(ctx, tenant, 0, months[1]); err != nil {
		b.Fatal(err)
	}
	svc := history.New(history.Deps{
		Store: s, Routes: memory.NewRouteCache(), Months: state, Metrics: memory.NewMetrics(),
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	cases := []struct {
		name   string
		before int64 // the page is the 50 seqs below it
	}{
		{"one_month", 2 * perMonth},               // seqs 350-399, all in the second month
		{"two_months", perMonth + pageSize/2 + 1}, // seqs 176-225: 25 in each month
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			var durations []time.Duration
			for b.Loop() {
				start := time.Now()
				page, err := svc.History(ctx, history.HistoryRequest{Tenant: tenant, Topic: "grp_1", Before: tc.before, Limit: pageSize})
				durations = append(durations, time.Since(start))
				if err != nil || len(page) != pageSize || page[0].Seq != tc.before-1 {
					b.Fatalf("page: %d messages, err %v", len(page), err)
				}
			}
			slices.Sort(durations)
			b.ReportMetric(float64(durations[len(durations)*99/100].Microseconds()), "p99-µs")
		})
	}
}
