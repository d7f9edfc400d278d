// Package seqholes closes the seq holes that failed sends leave (DESIGN §4): the Redis script
// allocated a seq whose message never committed, so a client that syncs the topic would wait
// for it forever. Once the first message stored after a hole is older than a bound (longer
// than any retry still holds the allocation: a late retry of it finds the seq taken and is
// given a new one), the sweeper writes a tombstone (status deleted) at each missing seq, and
// sync returns it like any closed seq.
package seqholes

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/route"
	"github.com/imdhq/imd/core/domain/seq"
	"github.com/imdhq/imd/core/domain/shard"
	"github.com/imdhq/imd/core/kit/periodic"
	"github.com/imdhq/imd/ports"
)

// Defaults of Config.
const (
	DefaultAfter     = 10 * time.Minute
	DefaultMaxPerRun = 10000
	suspectsPage     = 100
	rowsPage         = 500
)

// Config bounds the sweeper.
type Config struct {
	// After is how old the first message stored after a hole must be before the hole is
	// closed (DESIGN §4: "no retry within a bound, e.g. 10 minutes").
	After time.Duration
	// MaxPerRun bounds the tombstones one Sweep writes, so a pathological range cannot stall
	// the loop; the next run goes on.
	MaxPerRun int
}

// Deps are the ports the sweeper works through.
type Deps struct {
	Holes   ports.SeqHoles
	Store   ports.MessageStore
	Shards  ports.ShardStore
	IDs     ports.IDGenerator
	Clock   ports.Clock
	Metrics ports.Metrics
	Log     *slog.Logger
}

// Sweeper finds and closes old seq holes.
type Sweeper struct {
	cfg Config
	d   Deps
}

// New returns a sweeper.
func New(cfg Config, d Deps) *Sweeper {
	if cfg.After <= 0 {
		cfg.After = DefaultAfter
	}
	if cfg.MaxPerRun <= 0 {
		cfg.MaxPerRun = DefaultMaxPerRun
	}
	return &Sweeper{cfg: cfg, d: d}
}

// Sweep closes the holes older than the bound in every month of the tenant that takes writes
// and returns how many seqs it closed.
func (s *Sweeper) Sweep(ctx context.Context, tenant string) (int, error) {
	infos, err := s.d.Shards.Catalog(ctx, tenant)
	if err != nil {
		return 0, fmt.Errorf("seq holes of %s: catalog: %w", tenant, err)
	}
	cutoff := s.d.Clock.Now().Add(-s.cfg.After)
	closed := 0
	for _, info := range infos {
		if !info.State.AcceptsWrites() {
			continue
		}
		after := ""
		for closed < s.cfg.MaxPerRun {
			topics, err := s.d.Holes.HoleSuspects(ctx, tenant, info.Month, after, suspectsPage)
			if err != nil {
				return closed, fmt.Errorf("seq holes of %s in %s: %w", tenant, info.Month, err)
			}
			for _, topic := range topics {
				n, err := s.sweepTopic(ctx, tenant, info.Month, topic, cutoff, s.cfg.MaxPerRun-closed)
				closed += n
				if err != nil {
					return closed, err
				}
			}
			if len(topics) < suspectsPage {
				break
			}
			after = topics[len(topics)-1]
		}
	}
	return closed, nil
}

// sweepTopic closes the old holes of topic in month m: the missing seqs between the topic's
// previous segment and its rows of m, and between those rows. A hole between two months is
// closed in the later one, the month of the message that revealed it.
func (s *Sweeper) sweepTopic(ctx context.Context, tenant string, m month.Month, topic string, cutoff time.Time, budget int) (int, error) {
	rt, err := s.d.Store.Segments(ctx, tenant, topic)
	if err != nil {
		return 0, fmt.Errorf("seq holes of %s: route of %s: %w", tenant, topic, err)
	}
	cursor, found := previousMax(rt, m)
	if !found {
		return 0, nil
	}
	closed := 0
	for closed < budget {
		rows, err := s.d.Store.Page(ctx, tenant, m, message.PageQuery{Topic: topic, After: cursor, Limit: rowsPage, IncludeDeleted: true})
		if err != nil {
			return closed, fmt.Errorf("seq holes of %s: page %s in %s: %w", tenant, topic, m, err)
		}
		for _, r := range rows {
			if r.Seq > cursor+1 && r.CreatedAt.Before(cutoff) {
				n, err := s.close(ctx, tenant, r, cursor+1, min(r.Seq, cursor+1+int64(budget-closed)))
				closed += n
				if err != nil || closed >= budget {
					return closed, err
				}
			}
			cursor = r.Seq
		}
		if len(rows) < rowsPage {
			break
		}
	}
	return closed, nil
}

// previousMax is the last seq of the topic before its segment of m (0 when m is its first),
// and whether m has a segment at all.
func previousMax(rt route.Route, m month.Month) (int64, bool) {
	var prev int64
	for _, seg := range route.Normalize(rt) {
		if seg.Month == m {
			return prev, true
		}
		prev = max(prev, seg.MaxSeq)
	}
	return 0, false
}

// close writes tombstones at the seqs [from, to) before next, the message after the hole.
// A seq stored meanwhile (a send that came through after all) is left as it is.
func (s *Sweeper) close(ctx context.Context, tenant string, next message.Message, from, to int64) (int, error) {
	closed := 0
	for sq := from; sq < to; sq++ {
		id, err := s.d.IDs.NextID()
		if err != nil {
			return closed, fmt.Errorf("seq holes of %s: msg_id: %w", tenant, err)
		}
		// The tombstone takes the time of the message that revealed the hole, so the month's
		// time range stays what its messages made it.
		t := message.Message{
			Topic: next.Topic, GroupID: next.GroupID, ConversationID: next.ConversationID, Seq: sq, MsgID: id,
			Type: next.Type, Status: message.StatusDeleted, Version: 1, CreatedAt: next.CreatedAt, Month: next.Month,
		}
		err = s.d.Holes.CloseHole(ctx, tenant, t)
		switch {
		case err == nil:
			closed++
			s.d.Metrics.Inc("group_message_seq_hole_closed_total")
			s.d.Log.InfoContext(ctx, "seq hole closed", "tenant", tenant, "topic", t.Topic, "seq", sq, "shard_month", t.Month.String())
		case errors.Is(err, seq.ErrTaken):
		case errors.Is(err, shard.ErrMonthNotWritable), errors.Is(err, shard.ErrMonthMissing):
			// Sealed or gone since the catalog was read: the next run skips the month.
			s.d.Log.WarnContext(ctx, "seq hole left in a month that takes no writes", "tenant", tenant, "topic", t.Topic, "seq", sq, "shard_month", t.Month.String(), "err", err)
			return closed, nil
		default:
			return closed, fmt.Errorf("seq holes of %s: close %s seq %d in %s: %w", tenant, t.Topic, sq, t.Month, err)
		}
	}
	return closed, nil
}

// RunEvery sweeps the tenants every interval until ctx ends.
func (s *Sweeper) RunEvery(ctx context.Context, tenants func() []string, interval time.Duration) {
	periodic.EveryTenant(ctx, interval, tenants, func(ctx context.Context, tenant string) {
		if _, err := s.Sweep(ctx, tenant); err != nil && ctx.Err() == nil {
			s.d.Log.WarnContext(ctx, "seq hole sweep failed", "tenant", tenant, "err", err)
		}
	})
}
