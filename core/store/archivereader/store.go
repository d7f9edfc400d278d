package archivereader

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/shard"
	"github.com/imdhq/imd/ports"
)

// DefaultStateTTL bounds how long a node may serve a month from MySQL after another node
// archived it; a MySQL failure on such a month re-reads the catalog at once.
const DefaultStateTTL = 10 * time.Second

// States caches which months of each tenant the catalog lists as archived.
type States struct {
	catalog ports.ShardStore
	ttl     time.Duration
	now     func() time.Time

	mu      sync.Mutex
	tenants map[string]archivedSet
}

type archivedSet struct {
	months map[month.Month]bool
	at     time.Time
}

// NewStates returns the cache over the catalog, its entries fresh for cfg.StateTTL.
func NewStates(cfg Config, catalog ports.ShardStore, clock ports.Clock) *States {
	ttl := cfg.StateTTL
	if ttl <= 0 {
		ttl = DefaultStateTTL
	}
	return &States{catalog: catalog, ttl: ttl, now: clock.Now, tenants: map[string]archivedSet{}}
}

// Archived reports whether m is archived, from the cache while it is fresh.
func (s *States) Archived(ctx context.Context, tenant string, m month.Month) (bool, error) {
	s.mu.Lock()
	set, ok := s.tenants[tenant]
	s.mu.Unlock()
	if !ok || s.now().Sub(set.at) >= s.ttl {
		var err error
		if set, err = s.load(ctx, tenant); err != nil {
			return false, err
		}
	}
	return set.months[m], nil
}

// ArchivedNow reads the catalog now, for decisions a stale answer would make wrong.
func (s *States) ArchivedNow(ctx context.Context, tenant string, m month.Month) (bool, error) {
	set, err := s.load(ctx, tenant)
	if err != nil {
		return false, err
	}
	return set.months[m], nil
}

// Invalidate makes the next question about the tenant read the catalog.
func (s *States) Invalidate(tenant string) {
	s.mu.Lock()
	delete(s.tenants, tenant)
	s.mu.Unlock()
}

func (s *States) load(ctx context.Context, tenant string) (archivedSet, error) {
	infos, err := s.catalog.Catalog(ctx, tenant)
	if err != nil {
		return archivedSet{}, fmt.Errorf("catalog of %s: %w", tenant, err)
	}
	set := archivedSet{months: map[month.Month]bool{}, at: s.now()}
	for _, in := range infos {
		if in.State == shard.Archived {
			set.months[in.Month] = true
		}
	}
	s.mu.Lock()
	s.tenants[tenant] = set
	s.mu.Unlock()
	return set, nil
}

// Store is a ports.MessageStore and ports.MessageSearch that reads archived months from the
// archive and everything else from the store it wraps. Writes always go to the wrapped store,
// which refuses archived months (shard.ErrMonthNotWritable).
type Store struct {
	ports.MessageStore
	search ports.MessageSearch
	reader *Reader
	states *States
}

var (
	_ ports.MessageStore  = (*Store)(nil)
	_ ports.MessageSearch = (*Store)(nil)
)

// NewStore wraps live (and its search) so archived months are read through reader.
func NewStore(live ports.MessageStore, search ports.MessageSearch, reader *Reader, states *States) *Store {
	return &Store{MessageStore: live, search: search, reader: reader, states: states}
}

// Get reads one message from wherever its month lives.
func (s *Store) Get(ctx context.Context, tenant string, m month.Month, topic string, seq int64) (message.Message, error) {
	return read(s, ctx, tenant, m,
		func() (message.Message, error) { return s.MessageStore.Get(ctx, tenant, m, topic, seq) },
		func() (message.Message, error) { return s.reader.Get(ctx, tenant, m, topic, seq) })
}

// Page reads one month of a topic from wherever the month lives.
func (s *Store) Page(ctx context.Context, tenant string, m month.Month, q message.PageQuery) ([]message.Message, error) {
	return read(s, ctx, tenant, m,
		func() ([]message.Message, error) { return s.MessageStore.Page(ctx, tenant, m, q) },
		func() ([]message.Message, error) { return s.reader.Page(ctx, tenant, m, q) })
}

// Search searches one month from wherever the month lives.
func (s *Store) Search(ctx context.Context, tenant string, m month.Month, q ports.SearchQuery) ([]message.Message, error) {
	return read(s, ctx, tenant, m,
		func() ([]message.Message, error) { return s.search.Search(ctx, tenant, m, q) },
		func() ([]message.Message, error) { return s.reader.Search(ctx, tenant, m, q) })
}

// read sends an archived month to the archive; a month marked archived without a manifest
// (archived as a state only, before archives were written) is still in its table. A live read
// that fails (other than not found) may have raced an archive and drop done on another node:
// the catalog is read again, and an archived month is then read from the archive.
func read[T any](s *Store, ctx context.Context, tenant string, m month.Month, live, archived func() (T, error)) (T, error) {
	isArchived, err := s.states.Archived(ctx, tenant, m)
	if err == nil && isArchived {
		got, err := archived()
		if !errors.Is(err, ErrNoArchive) {
			return got, err
		}
	}
	got, liveErr := live()
	if liveErr == nil || apperr.CodeOf(liveErr) == apperr.NotFound {
		return got, liveErr
	}
	s.states.Invalidate(tenant)
	if now, err := s.states.Archived(ctx, tenant, m); err == nil && now {
		return archived()
	}
	return got, liveErr
}

// Editor refuses changes to messages of archived months: their archive files are the record
// and never change. Restoring the month brings it back to a table that takes them.
type Editor struct {
	ports.MessageEditor
	states *States
}

// NewEditor wraps editor.
func NewEditor(editor ports.MessageEditor, states *States) *Editor {
	return &Editor{MessageEditor: editor, states: states}
}

// Modify is the wrapped editor's, for months that are not archived.
func (e *Editor) Modify(ctx context.Context, tenant string, m month.Month, topic string, seq int64,
	change func(current message.Message) (message.Revision, error)) (message.Message, error) {
	// Read now, not from the cache: a change that slips past a month archived on another node
	// would make its table differ from the archive (Drop then refuses, but the change is late).
	archived, err := e.states.ArchivedNow(ctx, tenant, m)
	if err != nil {
		return message.Message{}, apperr.Wrap(apperr.Busy, "catalog unavailable", err)
	}
	if archived {
		return message.Message{}, apperr.New(apperr.Conflict, "the message's month is archived; restore the month to change it")
	}
	return e.MessageEditor.Modify(ctx, tenant, m, topic, seq, change)
}
