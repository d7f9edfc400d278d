package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"time"

	"github.com/imdhq/imd/adapters/mysql/sqlcdb"
	"github.com/imdhq/imd/core/domain/msgref"
	"github.com/imdhq/imd/ports"
)

// Reactions implements ports.Reactions and ports.Pins on im_reactions and im_pins: rows by
// topic+seq beside the month tables (DESIGN §3.1).
type Reactions struct {
	cluster *Cluster
}

var (
	_ ports.Reactions = (*Reactions)(nil)
	_ ports.Pins      = (*Reactions)(nil)
)

// NewReactions returns the reaction and pin stores over the provisioned tenants of c.
func NewReactions(c *Cluster) *Reactions { return &Reactions{cluster: c} }

// lockedTx runs fn in one REPEATABLE READ transaction, again after a deadlock: its first
// statement locks the rows of one message or topic and the gap beside them, so two adds of the
// same message take turns and the second sees the first's row when it checks the limits.
func (s *Reactions) lockedTx(ctx context.Context, tenant string, fn func(q *sqlcdb.Queries) error) error {
	t, err := s.cluster.tenant(tenant)
	if err != nil {
		return err
	}
	return retryTransient(func() error { return inTxAt(ctx, t.db, sql.LevelRepeatableRead, fn) })
}

func (s *Reactions) AddReaction(ctx context.Context, tenant string, r msgref.Reaction, lim msgref.ReactionLimits) (msgref.ReactionOutcome, time.Time, error) {
	var (
		outcome msgref.ReactionOutcome
		at      time.Time
	)
	err := s.lockedTx(ctx, tenant, func(q *sqlcdb.Queries) error {
		rows, err := q.LockReactions(ctx, sqlcdb.LockReactionsParams{Topic: r.Topic, Seqid: r.Seq})
		if err != nil {
			return fmt.Errorf("lock reactions: %w", err)
		}
		have := make([]msgref.Reaction, len(rows))
		for i, row := range rows {
			have[i] = msgref.Reaction{Emoji: row.Emoji, User: row.UserID, At: row.CreatedAt.UTC()}
		}
		outcome, at = msgref.Admit(have, r, lim)
		if outcome != msgref.ReactionChanged {
			return nil
		}
		return q.InsertReaction(ctx, sqlcdb.InsertReactionParams{
			Topic: r.Topic, Seqid: r.Seq, Emoji: r.Emoji, UserID: r.User, CreatedAt: at,
		})
	})
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("add reaction to %s seq %d: %w", r.Topic, r.Seq, err)
	}
	return outcome, at, nil
}

func (s *Reactions) RemoveReaction(ctx context.Context, tenant string, r msgref.Reaction) (msgref.ReactionOutcome, error) {
	t, err := s.cluster.tenant(tenant)
	if err != nil {
		return 0, err
	}
	n, err := t.q.DeleteReaction(ctx, sqlcdb.DeleteReactionParams{Topic: r.Topic, Seqid: r.Seq, Emoji: r.Emoji, UserID: r.User})
	if err != nil {
		return 0, fmt.Errorf("remove reaction from %s seq %d: %w", r.Topic, r.Seq, err)
	}
	if n == 0 {
		return msgref.ReactionUnchanged, nil
	}
	return msgref.ReactionChanged, nil
}

func (s *Reactions) ReactionSummaries(ctx context.Context, tenant, topicName string, seqs []int64, viewer int64) (map[int64][]msgref.ReactionCount, error) {
	out := map[int64][]msgref.ReactionCount{}
	if len(seqs) == 0 {
		return out, nil
	}
	t, err := s.cluster.tenant(tenant)
	if err != nil {
		return nil, err
	}
	rows, err := t.q.ReactionSummaries(ctx, sqlcdb.ReactionSummariesParams{Viewer: viewer, Topic: topicName, Seqs: seqs})
	if err != nil {
		return nil, fmt.Errorf("reaction summaries of %s: %w", topicName, err)
	}
	for _, r := range rows {
		out[r.Seqid] = append(out[r.Seqid], msgref.ReactionCount{Emoji: r.Emoji, Count: int(r.Reactions), Mine: r.Mine == 1})
	}
	return out, nil
}

func (s *Reactions) Reactors(ctx context.Context, tenant, topicName string, seq int64, limit int) ([]msgref.Reaction, error) {
	t, err := s.cluster.tenant(tenant)
	if err != nil {
		return nil, err
	}
	rows, err := t.q.Reactors(ctx, sqlcdb.ReactorsParams{Topic: topicName, Seqid: seq, Limit: int32(min(limit, math.MaxInt32))})
	if err != nil {
		return nil, fmt.Errorf("reactions on %s seq %d: %w", topicName, seq, err)
	}
	out := make([]msgref.Reaction, len(rows))
	for i, r := range rows {
		out[i] = msgref.Reaction{Topic: r.Topic, Seq: r.Seqid, Emoji: r.Emoji, User: r.UserID, At: r.CreatedAt.UTC()}
	}
	return out, nil
}

func (s *Reactions) AddPin(ctx context.Context, tenant string, p msgref.Pin, max int) (msgref.Pin, bool, error) {
	var (
		stored msgref.Pin
		added  bool
	)
	err := s.lockedTx(ctx, tenant, func(q *sqlcdb.Queries) error {
		rows, err := q.LockPins(ctx, p.Topic)
		if err != nil {
			return fmt.Errorf("lock pins: %w", err)
		}
		have := make([]msgref.Pin, len(rows))
		for i, r := range rows {
			have[i] = pin(r)
		}
		stored, added, err = msgref.AdmitPin(have, p, max)
		if err != nil || !added {
			return err
		}
		return q.InsertPin(ctx, sqlcdb.InsertPinParams{Topic: p.Topic, Seqid: p.Seq, PinnedBy: p.By, CreatedAt: stored.At})
	})
	if err != nil {
		return msgref.Pin{}, false, fmt.Errorf("pin %s seq %d: %w", p.Topic, p.Seq, err)
	}
	return stored, added, nil
}

func (s *Reactions) RemovePin(ctx context.Context, tenant, topicName string, seq int64) (bool, error) {
	t, err := s.cluster.tenant(tenant)
	if err != nil {
		return false, err
	}
	n, err := t.q.DeletePin(ctx, sqlcdb.DeletePinParams{Topic: topicName, Seqid: seq})
	if err != nil {
		return false, fmt.Errorf("unpin %s seq %d: %w", topicName, seq, err)
	}
	return n > 0, nil
}

func (s *Reactions) Pins(ctx context.Context, tenant, topicName string) ([]msgref.Pin, error) {
	t, err := s.cluster.tenant(tenant)
	if err != nil {
		return nil, err
	}
	rows, err := t.q.PinsOf(ctx, topicName)
	if err != nil {
		return nil, fmt.Errorf("pins of %s: %w", topicName, err)
	}
	out := make([]msgref.Pin, len(rows))
	for i, r := range rows {
		out[i] = pin(r)
	}
	return out, nil
}

func pin(r sqlcdb.ImPin) msgref.Pin {
	return msgref.Pin{Topic: r.Topic, Seq: r.Seqid, By: r.PinnedBy, At: r.CreatedAt.UTC()}
}
