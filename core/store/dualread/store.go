package dualread

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/route"
	"github.com/imdhq/imd/core/domain/shard"
	"github.com/imdhq/imd/ports"
)

// Store is a ports.MessageStore that reads the legacy table too while the tenant migrates.
// Writes go to the month tables only: no long-lived double writes (seed 000 §9).
type Store struct {
	inner ports.MessageStore
	src   *Source
}

var _ ports.MessageStore = (*Store)(nil)

// NewStore decorates inner.
func NewStore(inner ports.MessageStore, src *Source) *Store { return &Store{inner: inner, src: src} }

// Append writes to the month tables only.
func (s *Store) Append(ctx context.Context, tenant string, m message.Message, hash string) (ports.AppendResult, error) {
	return s.inner.Append(ctx, tenant, m, hash)
}

// AppendFresh writes to the month tables only.
func (s *Store) AppendFresh(ctx context.Context, tenant string, m message.Message, hash string, at time.Time) (ports.AppendResult, error) {
	return s.inner.AppendFresh(ctx, tenant, m, hash, at)
}

// MaxSeq is the higher of the mirror's and the legacy table's, so a seq counter re-seeded
// after Redis lost it continues above every legacy seq, also before they are copied.
func (s *Store) MaxSeq(ctx context.Context, tenant, topic string) (int64, error) {
	n, err := s.inner.MaxSeq(ctx, tenant, topic)
	if err != nil {
		return 0, err
	}
	on, err := s.src.active(ctx, tenant)
	if err != nil || !on {
		return n, err
	}
	l, err := s.src.legacy.MaxSeq(ctx, tenant, topic)
	switch {
	case s.src.gone(ctx, tenant, err):
		return n, nil
	case err != nil:
		return 0, fmt.Errorf("legacy max seq of %s: %w", topic, err)
	}
	return max(n, l), nil
}

// Segments merges the legacy rows' months into the mirror's route, so routes built from it
// (Redis fills, repairs, rebuilds) name the months legacy rows will be copied to.
func (s *Store) Segments(ctx context.Context, tenant, topic string) (route.Route, error) {
	r, err := s.inner.Segments(ctx, tenant, topic)
	if err != nil {
		return nil, err
	}
	on, err := s.src.active(ctx, tenant)
	if err != nil || !on {
		return r, err
	}
	l, err := s.src.legacy.Segments(ctx, tenant, topic)
	switch {
	case s.src.gone(ctx, tenant, err):
		return r, nil
	case err != nil:
		return nil, fmt.Errorf("legacy segments of %s: %w", topic, err)
	}
	return mergeRoutes(r, l), nil
}

// Get answers from the month table, else from a legacy row not copied yet. A miss keeps the
// month table's error, so callers still tell a missing month from a missing message.
func (s *Store) Get(ctx context.Context, tenant string, m month.Month, topic string, seq int64) (message.Message, error) {
	msg, err := s.inner.Get(ctx, tenant, m, topic, seq)
	if err == nil || !absent(err) {
		return msg, err
	}
	on, stErr := s.src.active(ctx, tenant)
	if stErr != nil {
		return message.Message{}, stErr
	}
	if !on {
		return message.Message{}, err
	}
	lm, lerr := s.src.legacy.Get(ctx, tenant, m, topic, seq)
	switch {
	case lerr == nil:
		return lm, nil
	case errors.Is(lerr, message.ErrNotFound), s.src.gone(ctx, tenant, lerr):
		return message.Message{}, err
	}
	return message.Message{}, fmt.Errorf("legacy get %s seq %d in %s: %w", topic, seq, m, lerr)
}

// Page merges the month's legacy rows into the month table's page. The legacy rows are read
// first: a row the backfill copies between the two reads is then in both (and the month
// table's copy wins), never in neither.
func (s *Store) Page(ctx context.Context, tenant string, m month.Month, q message.PageQuery) ([]message.Message, error) {
	on, err := s.src.active(ctx, tenant)
	if err != nil {
		return nil, err
	}
	if !on {
		return s.inner.Page(ctx, tenant, m, q)
	}
	old, err := s.src.legacy.Page(ctx, tenant, m, q)
	if err != nil && !s.src.gone(ctx, tenant, err) {
		return nil, fmt.Errorf("legacy page %s in %s: %w", q.Topic, m, err)
	}
	cur, err := s.inner.Page(ctx, tenant, m, q)
	if err != nil && !(len(old) > 0 && errors.Is(err, shard.ErrMonthMissing)) {
		// A month without a table but with legacy rows (before the cutover prepared the
		// tables) is answered from the legacy rows alone.
		return nil, err
	}
	return mergeSeq(cur, old, q.Desc, q.Limit), nil
}

// absent reports whether a month-table read found nothing: no such row, or no such table.
func absent(err error) bool {
	return errors.Is(err, message.ErrNotFound) || errors.Is(err, shard.ErrMonthMissing)
}
