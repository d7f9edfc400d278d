package memory

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/route"
	"github.com/imdhq/imd/core/domain/shard"
	"github.com/imdhq/imd/ports"
)

// ErrStateChanged: SetState found the month in another state than expected.
var ErrStateChanged = errors.New("month state changed")

// ShardStore is the in-memory catalog of month tables. It also holds the tenants' message
// data, so a MessageStore made over it shares one "database" with it, as the MySQL stores do.
type ShardStore struct {
	mu      sync.Mutex
	tenants map[string]*tenantMessages
	// now and dedupTTL: the MySQL writer stamps a dedup record with its node's clock plus the
	// retention; a simulation sets its own clock and a short retention (WithRetention).
	now      func() time.Time
	dedupTTL time.Duration
}

// tenantMessages is one tenant's message data: catalog, month tables, route mirror, dedup
// records, and what the message editor and delete log write (messageeditor.go, dellog.go).
type tenantMessages struct {
	catalog   map[month.Month]*monthCatalogEntry
	tables    map[month.Month]map[topicSeqKey]message.Message
	mirror    route.Mirror
	dedup     map[messageDedupKey]messageDedupRecord
	revisions []Revision
	dellog    map[dellogKey][]seqRange // nil until the first range
}

type monthCatalogEntry struct {
	state       shard.State
	updated     time.Time
	activeSince time.Time
}

type topicSeqKey struct {
	topic string
	seq   int64
}

type messageDedupKey struct {
	topic       string
	from        int64
	clientMsgID string
}

type messageDedupRecord struct {
	seq     int64
	month   month.Month
	msgID   int64
	hash    string
	queued  bool      // the deliver job was queued (ports.QueuedMarks)
	expires time.Time // see Housekeeping.PurgeExpiredDedup
}

var _ ports.ShardStore = (*ShardStore)(nil)

// NewShardStore returns an empty shard store; tenants appear on first use.
func NewShardStore() *ShardStore {
	return &ShardStore{tenants: make(map[string]*tenantMessages), now: time.Now, dedupTTL: DedupTTL}
}

// WithRetention has the store read now for every instant it stamps and keep dedup records for
// dedupTTL after their message, so a simulated clock can move a retry past the retention.
func (s *ShardStore) WithRetention(now func() time.Time, dedupTTL time.Duration) *ShardStore {
	s.now, s.dedupTTL = now, dedupTTL
	return s
}

// db returns the tenant's data; the caller holds s.mu.
func (s *ShardStore) db(tenant string) *tenantMessages {
	return stateOf(s.tenants, tenant, func() *tenantMessages {
		return &tenantMessages{
			catalog: make(map[month.Month]*monthCatalogEntry),
			tables:  make(map[month.Month]map[topicSeqKey]message.Message),
			mirror:  make(route.Mirror),
			dedup:   make(map[messageDedupKey]messageDedupRecord),
		}
	})
}

// EnsureTable creates m's table and registers it as prepared; a registered month keeps its state.
func (s *ShardStore) EnsureTable(_ context.Context, tenant string, m month.Month) error {
	name, err := m.Table()
	if err != nil {
		return fmt.Errorf("ensure month table: %w", err)
	}
	if _, err := month.ParseTable(name); err != nil {
		return fmt.Errorf("ensure month table: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.db(tenant)
	if _, ok := d.tables[m]; !ok {
		d.tables[m] = make(map[topicSeqKey]message.Message)
	}
	if _, ok := d.catalog[m]; !ok {
		d.catalog[m] = &monthCatalogEntry{state: shard.Prepared, updated: s.millisNow()}
	}
	return nil
}

// Catalog lists the registered months in order; row counts come from the route mirror.
func (s *ShardStore) Catalog(_ context.Context, tenant string) ([]shard.Info, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.db(tenant)
	out := make([]shard.Info, 0, len(d.catalog))
	for m, e := range d.catalog {
		table, _ := m.Table()
		info := shard.Info{Month: m, Table: table, State: e.state, UpdatedAt: e.updated, ActiveSince: e.activeSince}
		for _, months := range d.mirror {
			seg, ok := months[m]
			if !ok {
				continue
			}
			info.RowCount += seg.Count
			if info.MinCreatedAt.IsZero() || seg.MinCreatedAt.Before(info.MinCreatedAt) {
				info.MinCreatedAt = seg.MinCreatedAt
			}
			if seg.MaxCreatedAt.After(info.MaxCreatedAt) {
				info.MaxCreatedAt = seg.MaxCreatedAt
			}
		}
		out = append(out, info)
	}
	slices.SortFunc(out, func(a, b shard.Info) int { return cmp.Compare(a.Month, b.Month) })
	return out, nil
}

// SetState moves m from one state to another, only if it is in from (compare-and-set).
func (s *ShardStore) SetState(_ context.Context, tenant string, m month.Month, from, to shard.State) error {
	switch to {
	case shard.Prepared, shard.Writable, shard.Sealing, shard.Sealed, shard.Archived:
	default:
		return fmt.Errorf("set state of %s: unknown state %q", m, to)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.db(tenant).catalog[m]
	if !ok {
		return fmt.Errorf("set state of %s: %w", m, shard.ErrMonthMissing)
	}
	if e.state != from {
		return fmt.Errorf("set state of %s: %w: it is %s, not %s", m, ErrStateChanged, e.state, from)
	}
	e.state, e.updated = to, s.millisNow()
	return nil
}

// RecordSwitch keeps the earliest ActiveSince of m; see ports.ShardStore.
func (s *ShardStore) RecordSwitch(_ context.Context, tenant string, m month.Month, at time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.db(tenant).catalog[m]
	if !ok {
		return nil
	}
	e.activeSince, _ = shard.EarlierActive(e.activeSince, at.UTC().Truncate(time.Millisecond))
	return nil
}

// now has the precision of the DATETIME(3) columns the real store keeps.
func millisNow() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }

// millisNow is the store's clock at that precision.
func (s *ShardStore) millisNow() time.Time { return s.now().UTC().Truncate(time.Millisecond) }
