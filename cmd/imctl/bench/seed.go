package bench

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/imdhq/imd/adapters/snowflake"
	"github.com/imdhq/imd/cmd/imctl/adminapi"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/topic"
)

// SeedMachineID is the snowflake machine id of seeded messages: their ids are composed at
// their created_at, in the past, and no imd node runs as machine 1023 (node ids count from 1),
// so they can never collide with an id a node issues.
const SeedMachineID = snowflake.MaxMachineID

// seedBatch bounds the rows of one multi-row INSERT (14 placeholders a row, under MySQL's
// 65,535).
const maxSeedBatch = 4000

// SeedConfig is one `imctl bench seed`: stored history for the DESIGN §10 growth claim.
type SeedConfig struct {
	Messages int // in all
	Months   int // ending with the tenant's active month
	Pairs    int // friend pairs, one P2P topic each
	Batch    int // rows per INSERT
	Parallel int // admin calls and month writers at once

	Admin  *adminapi.Client
	DB     *sql.DB // the tenant's database
	Status io.Writer
	Now    func() time.Time
}

// Validate rejects settings a seed cannot honour.
func (c SeedConfig) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.Pairs < 1 || c.Messages < c.Pairs {
		bad("seed: --pairs must be at least 1 and --messages at least --pairs")
	}
	if c.Months < 1 || c.Months > 120 {
		bad("seed: --months must be in [1, 120]")
	}
	if c.Batch < 1 || c.Batch > maxSeedBatch {
		bad("seed: --batch must be in [1, %d]", maxSeedBatch)
	}
	if c.Parallel < 1 {
		bad("seed: --parallel must be at least 1")
	}
	if c.Admin == nil || c.DB == nil {
		bad("seed: needs the admin API and the tenant's database")
	}
	return errors.Join(errs...)
}

// seedSpan is one topic's messages in one month: seqs first..last.
type seedSpan struct {
	topic       string
	a, b        int64 // the pair; a sends the odd seqs, b the even
	first, last int64
}

// seedMonth is what one month table receives.
type seedMonth struct {
	month month.Month
	spans []seedSpan
	rows  int
	// from, step: the month's rows get created_at from, from+step, … in span order, so
	// every row has its own millisecond (its msg_id, composed at it, is unique) and no row
	// is later than now.
	from time.Time
	step time.Duration
}

// planSeed spreads messages over pairs (the first get one more when it does not divide) and
// each topic's seqs over the months ending with active, oldest first, in seq order.
func planSeed(active month.Month, months int, pairs [][2]int64, messages int, now time.Time) ([]seedMonth, error) {
	plan := make([]seedMonth, months)
	for i := range plan {
		plan[i].month = active.Add(i - months + 1)
	}
	for p, pair := range pairs {
		k := int64(messages / len(pairs))
		if p < messages%len(pairs) {
			k++
		}
		for i := range plan {
			first, last := int64(i)*k/int64(months)+1, int64(i+1)*k/int64(months)
			if first > last {
				continue
			}
			plan[i].spans = append(plan[i].spans, seedSpan{topic: topic.ForPair(pair[0], pair[1]), a: pair[0], b: pair[1], first: first, last: last})
			plan[i].rows += int(last - first + 1)
		}
	}
	for i := range plan {
		m := &plan[i]
		end := m.month.End()
		if now.Before(end) {
			end = now
		}
		span := end.Sub(m.month.Start())
		if m.rows == 0 {
			continue
		}
		m.from, m.step = m.month.Start(), (span / time.Duration(m.rows+1)).Truncate(time.Millisecond)
		if m.step < time.Millisecond {
			return nil, fmt.Errorf("seed: %d messages do not fit in month %s so far, one per millisecond", m.rows, m.month)
		}
	}
	return plan, nil
}

// Seed creates cfg.Pairs friend pairs through the admin API and writes cfg.Messages messages
// of their P2P topics straight into the month tables, with the route mirror and the month
// catalog, as the MySQL writer would have over cfg.Months months: send and sync then see
// them as real history (a topic's seq counter and route are rebuilt from the mirror on first
// use, as after a Redis loss). Not written: dedup records (they expire anyway) and the search
// index (a directory of imd's own).
func Seed(ctx context.Context, cfg SeedConfig) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	logf := func(format string, args ...any) {
		if cfg.Status != nil {
			fmt.Fprintf(cfg.Status, format+"\n", args...)
		}
	}
	active, err := activeMonth(ctx, cfg.Admin, month.Of(cfg.Now()))
	if err != nil {
		return err
	}
	if first := active.Add(1 - cfg.Months); first.Start().Before(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)) {
		return fmt.Errorf("seed: month %s is before the msg_id epoch (2025-01): use fewer --months", first)
	}
	pairs, err := seedPairs(ctx, cfg)
	if err != nil {
		return err
	}
	plan, err := planSeed(active, cfg.Months, pairs, cfg.Messages, cfg.Now().Add(-time.Minute))
	if err != nil {
		return err
	}
	ids, err := snowflake.New(SeedMachineID)
	if err != nil {
		return err
	}
	logf("seeding %d messages in %d topics over %s…%s", cfg.Messages, len(pairs), plan[0].month, active)
	start := time.Now()
	var written atomic.Int64
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(cfg.Parallel)
	for _, m := range plan {
		g.Go(func() error {
			if err := seedMonthTable(gctx, cfg, ids, m, &written); err != nil {
				return fmt.Errorf("seed: month %s: %w", m.month, err)
			}
			logf("month %s: %d messages (%d of %d, %.0f rows/s)", m.month, m.rows, written.Load(), cfg.Messages,
				float64(written.Load())/time.Since(start).Seconds())
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	logf("seeded %d messages in %s", written.Load(), time.Since(start).Round(time.Second))
	return checkSeeded(ctx, cfg.Admin, plan)
}

// checkSeeded reads the first seeded topic back through the admin API, which reads as sync
// does (catalog, route rebuilt from the mirror, month tables): every seq must be there, in
// order, across all the months.
func checkSeeded(ctx context.Context, admin *adminapi.Client, plan []seedMonth) error {
	var want int64
	var name string
	for _, m := range plan {
		for _, s := range m.spans {
			if name == "" {
				name = s.topic
			}
			if s.topic == name {
				want = s.last
			}
		}
	}
	var since int64
	for since < want {
		page, err := admin.Messages(ctx, name, 0, since, maxPageSize)
		if err != nil {
			return fmt.Errorf("seed: read %s back: %w", name, err)
		}
		for _, m := range page.Messages {
			if m.Seq != since+1 {
				return fmt.Errorf("seed: %s read back seq %d after %d", name, m.Seq, since)
			}
			since = m.Seq
		}
		if len(page.Messages) == 0 {
			break
		}
	}
	if since != want {
		return fmt.Errorf("seed: %s reads back up to seq %d of %d", name, since, want)
	}
	return nil
}

// seedPairs creates the users and friendships of the seeded topics, ids from a random base as
// a run's (so a seed never collides with a run).
func seedPairs(ctx context.Context, cfg SeedConfig) ([][2]int64, error) {
	base := (rand.Int64N(900_000) + 100_000) * 1_000_000
	pairs := make([][2]int64, cfg.Pairs)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(cfg.Parallel)
	for i := range pairs {
		a, b := base+int64(2*i)+1, base+int64(2*i)+2
		pairs[i] = [2]int64{a, b}
		g.Go(func() error {
			for _, u := range []int64{a, b} {
				if err := cfg.Admin.CreateUser(gctx, u, "seed-"+strconv.FormatInt(u-base, 10)); err != nil {
					return err
				}
			}
			return cfg.Admin.Friend(gctx, a, b)
		})
	}
	if err := g.Wait(); err != nil {
		return nil, fmt.Errorf("seed: users: %w", err)
	}
	return pairs, nil
}

// seedMonthTable ensures and registers the month's table (a past month the shard manager never
// prepared is sealed), then writes its rows in batches, each batch with its mirror rows in one
// transaction, as the writer does.
func seedMonthTable(ctx context.Context, cfg SeedConfig, ids *snowflake.Generator, m seedMonth, written *atomic.Int64) error {
	table, err := m.month.Table()
	if err != nil {
		return err
	}
	if _, err := cfg.DB.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS "+table+" LIKE im_group_messages_tpl"); err != nil {
		return err
	}
	if _, err := cfg.DB.ExecContext(ctx, `INSERT INTO im_group_message_shards (shard_month, table_name, shard_start, shard_end, status)
VALUES (?, ?, ?, ?, 'sealed') ON DUPLICATE KEY UPDATE shard_month = shard_month`,
		m.month.String(), table, m.month.Start(), m.month.End()); err != nil {
		return err
	}
	b := seedBatcher{cfg: cfg, ids: ids, table: table, m: m, at: m.from}
	for _, s := range m.spans {
		for seq := s.first; seq <= s.last; seq++ {
			if err := b.add(ctx, s, seq); err != nil {
				return err
			}
		}
		b.mirror = append(b.mirror, s)
		written.Add(s.last - s.first + 1)
	}
	if err := b.flush(ctx); err != nil {
		return err
	}
	_, err = cfg.DB.ExecContext(ctx, "UPDATE im_group_message_shards SET row_count = row_count + ? WHERE shard_month = ?", m.rows, m.month.String())
	return err
}

// seedBatcher gathers one INSERT's rows.
type seedBatcher struct {
	cfg    SeedConfig
	ids    *snowflake.Generator
	table  string
	m      seedMonth
	at     time.Time
	rows   []any
	n      int
	mirror []seedSpan // spans complete since the last flush
	times  map[string][2]time.Time
}

func (b *seedBatcher) add(ctx context.Context, s seedSpan, seq int64) error {
	b.at = b.at.Add(b.m.step)
	id, err := b.ids.Compose(b.at, 0, SeedMachineID)
	if err != nil {
		return err
	}
	from := s.a
	if seq%2 == 0 {
		from = s.b
	}
	content := seedContent(seq)
	b.rows = append(b.rows, id, s.topic, seq, from, "seed."+strconv.FormatInt(seq, 10), content, len(content), b.at, b.at)
	b.n++
	if b.times == nil {
		b.times = make(map[string][2]time.Time)
	}
	t := b.times[s.topic]
	if t[0].IsZero() {
		t[0] = b.at
	}
	t[1] = b.at
	b.times[s.topic] = t
	if b.n == b.cfg.Batch {
		return b.flush(ctx)
	}
	return nil
}

// flush writes the gathered rows and the mirror rows of the spans they completed. A span cut
// by a flush gets its mirror row with the flush that completes it, so the mirror always
// describes committed rows only.
func (b *seedBatcher) flush(ctx context.Context) error {
	if b.n == 0 && len(b.mirror) == 0 {
		return nil
	}
	tx, err := b.cfg.DB.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // after Commit a no-op
	if b.n > 0 {
		q := "INSERT INTO " + b.table + " (message_id, topic, group_id, seqid, from_user, client_msg_id, msg_type, status, content, content_size, version, created_at, updated_at) VALUES " +
			strings.TrimSuffix(strings.Repeat("(?, ?, 0, ?, ?, ?, 'text', 'normal', ?, ?, 1, ?, ?),", b.n), ",")
		if _, err := tx.ExecContext(ctx, q, b.rows...); err != nil {
			return err
		}
	}
	if len(b.mirror) > 0 {
		var args []any
		for _, s := range b.mirror {
			t := b.times[s.topic]
			args = append(args, s.topic, b.m.month.String(), s.first, s.last, s.last-s.first+1, t[0], t[1])
			delete(b.times, s.topic)
		}
		q := "INSERT INTO im_group_message_topic_shards (topic, shard_month, min_seq, max_seq, message_count, min_created_at, max_created_at) VALUES " +
			strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?, ?, ?, ?),", len(b.mirror)), ",")
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	b.rows, b.n, b.mirror = b.rows[:0], 0, b.mirror[:0]
	return nil
}

// seedContent is a ~100-byte text body, the size of a bench message in issue 16.
func seedContent(seq int64) string {
	return `{"text":"seeded history message #` + strconv.FormatInt(seq, 10) + `, about a hundred bytes of text like a real chat line."}`
}
