// Package archiver moves sealed months out of MySQL and back (seed 000 §10): it checks that a
// month may go, exports it per tenant to the blob store as compressed self-describing chunks
// with a manifest, reads everything back to verify it, and only then marks the month
// archived. Dropping the month table is a separate operator step that re-verifies the archive
// against the table; restore loads a month back into a table; purge ends a month for good,
// routes and mirror rows included (seed 000 §3.3 rule 5).
package archiver

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/shard"
	"github.com/imdhq/imd/core/loop/shardmanager"
	"github.com/imdhq/imd/core/store/archivereader"
	"github.com/imdhq/imd/ports"
)

// Defaults of Config.
const (
	DefaultChunkRows = 1000
	DefaultTopicPage = 500
	DefaultLockTTL   = time.Hour
)

// Config tunes the archiver; zero fields take the defaults.
type Config struct {
	// ChunkRows is how many rows of a topic one chunk file holds.
	ChunkRows int
	// TopicPage is how many topics one read of the route mirror lists.
	TopicPage int
	// AheadMonths is how many months after the current one the shard manager keeps tables
	// for; the manager's window (last month to current+AheadMonths) is never dropped or
	// purged, since the manager would create an empty table in its place.
	AheadMonths int
	// LockTTL bounds how long one node holds a month while working on it.
	LockTTL time.Duration
}

// Deps are the ports and services the archiver works with. Search and Files may be nil: a
// purge then has no index entries to remove.
type Deps struct {
	Catalog    ports.ShardStore
	Manager    *shardmanager.Manager // the sealed → archived state change
	Rows       ports.MonthRows
	Mirror     ports.RouteMirror
	Store      ports.MessageStore // the route mirror's segments of a topic
	Blobs      ports.BlobStore
	Reader     *archivereader.Reader
	States     *archivereader.States
	Deliveries ports.DeliverBacklog
	Repairs    shardmanager.Backlog
	References ports.References
	Purged     ports.MonthCatalog
	Routes     ports.RoutePurger
	Search     ports.SearchIndex
	Files      ports.GroupFiles
	Months     ports.MonthState
	Locks      ports.Locks
	Clock      ports.Clock
	Metrics    ports.Metrics
	Log        *slog.Logger
}

// Service archives, verifies, drops, restores and purges months.
type Service struct {
	cfg Config
	d   Deps
}

// New returns the service.
func New(cfg Config, d Deps) *Service {
	if cfg.ChunkRows <= 0 {
		cfg.ChunkRows = DefaultChunkRows
	}
	if cfg.TopicPage <= 0 {
		cfg.TopicPage = DefaultTopicPage
	}
	if cfg.AheadMonths <= 0 {
		cfg.AheadMonths = shardmanager.DefaultAheadMonths
	}
	if cfg.LockTTL <= 0 {
		cfg.LockTTL = DefaultLockTTL
	}
	return &Service{cfg: cfg, d: d}
}

// state reads one month's catalog state; 40401 when the month is not in the catalog.
func (s *Service) state(ctx context.Context, tenant string, m month.Month) (shard.State, error) {
	infos, err := s.d.Catalog.Catalog(ctx, tenant)
	if err != nil {
		return "", apperr.Wrap(apperr.Busy, "catalog unavailable", err)
	}
	for _, in := range infos {
		if in.Month == m {
			return in.State, nil
		}
	}
	return "", apperr.New(apperr.NotFound, "month not in the catalog")
}

// ManagerKeeps reports whether the shard manager keeps m's table (last month to
// current+AheadMonths by Redis TIME): it would create an empty table in a dropped one's place,
// so such a month is never dropped or purged.
func (s *Service) ManagerKeeps(ctx context.Context, m month.Month) (bool, error) {
	now, err := s.d.Months.Now(ctx)
	if err != nil {
		return false, apperr.Wrap(apperr.Busy, "month state unavailable", err)
	}
	cur := month.Of(now)
	return m >= cur.Add(-1) && m <= cur.Add(s.cfg.AheadMonths), nil
}

// outsideWindow refuses months the shard manager keeps tables for.
func (s *Service) outsideWindow(ctx context.Context, m month.Month) error {
	kept, err := s.ManagerKeeps(ctx, m)
	if err != nil {
		return err
	}
	if kept {
		return apperr.New(apperr.Conflict, fmt.Sprintf("the shard manager keeps the table of month %s (last month to %d months ahead); try again later", m, s.cfg.AheadMonths))
	}
	return nil
}

// exclusively runs fn while holding the month's archive lock, so two nodes never work on one
// month at once.
func (s *Service) exclusively(ctx context.Context, tenant string, m month.Month, fn func(context.Context) error) error {
	if !m.Valid() {
		return apperr.New(apperr.InvalidArgument, "invalid month")
	}
	name := "archive_" + m.String()
	token, ok, err := s.d.Locks.Acquire(ctx, tenant, name, s.cfg.LockTTL)
	if err != nil {
		return apperr.Wrap(apperr.Busy, "archive lock unavailable", err)
	}
	if !ok {
		return apperr.New(apperr.Conflict, fmt.Sprintf("another operation on month %s is running", m))
	}
	defer func() {
		if err := s.d.Locks.Release(context.WithoutCancel(ctx), tenant, name, token); err != nil {
			s.d.Log.WarnContext(ctx, "releasing the archive lock failed", "tenant", tenant, "month", m.String(), "err", err)
		}
	}()
	return fn(ctx)
}

// changed tells every reader of this node to look again at the month.
func (s *Service) changed(tenant string, m month.Month) {
	s.d.States.Invalidate(tenant)
	s.d.Reader.Forget(tenant, m)
}

// done counts an operation's outcome for the alerts and logs it.
func (s *Service) done(ctx context.Context, op, tenant string, m month.Month, err error) error {
	status := "ok"
	if err != nil {
		status = "failed"
		if apperr.CodeOf(err) == apperr.Internal {
			err = apperr.Wrap(apperr.Busy, op+" failed, retry", err)
		}
		s.d.Log.WarnContext(ctx, "archive operation failed", "op", op, "tenant", tenant, "month", m.String(), "err", err)
	} else {
		s.d.Log.InfoContext(ctx, "archive operation done", "op", op, "tenant", tenant, "month", m.String())
	}
	s.d.Metrics.Inc("group_message_archive_ops_total", op, status)
	return err
}

// refused is a check that failed: the month stays as it is until the operator fixes the cause.
func refused(format string, args ...any) error {
	return apperr.New(apperr.Conflict, fmt.Sprintf(format, args...))
}
