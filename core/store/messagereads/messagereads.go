// Package messagereads is the one chain of decorators every use case reads and changes
// messages through: the month tables' ports, merged with the legacy table while dual read is
// on (seed 000 §9, core/store/dualread), then the archive in front of them for sealed months
// (seed 000 §10, core/store/archivereader). Building the chain here keeps its order in one
// tested place; cmd/imd only hands it the ports.
package messagereads

import (
	"log/slog"
	"time"

	"github.com/imdhq/imd/core/store/archivereader"
	"github.com/imdhq/imd/core/store/dualread"
	"github.com/imdhq/imd/ports"
)

// Config says whether the legacy table is merged in.
type Config struct {
	// DualRead is migration.dual_read: merge a tenant's legacy table into every read while it
	// has one and its migration is not finished (seed 000 §9).
	DualRead bool
	// StatusTTL is how long a tenant's legacy status is trusted; ≤ 0: dualread.DefaultStatusTTL.
	StatusTTL time.Duration
}

// Deps are the month tables' raw ports and what the decorators read besides them.
type Deps struct {
	// The month tables.
	Store  ports.MessageStore
	Search ports.MessageSearch
	Finder ports.MessageFinder
	Editor ports.MessageEditor
	// The legacy table and the copy of one of its rows ahead of the backfill (dual read only).
	Legacy ports.LegacyMessages
	Copier dualread.Copier
	Clock  ports.Clock
	// The archive and the cache of which months are archived.
	Archive *archivereader.Reader
	States  *archivereader.States
	Log     *slog.Logger
}

// Reads are the message ports every use case reads and changes messages through.
type Reads struct {
	// Store, Search and Finder are the month tables, merged with the legacy table while dual
	// read is on (seed 000 §9).
	Store  ports.MessageStore
	Search ports.MessageSearch
	Finder ports.MessageFinder
	// Archived is Store and Search reading sealed months from the archive too: history's.
	Archived *archivereader.Store
	// Editor changes a message: a legacy message is copied first while dual read is on, and a
	// message of an archived month needs a restore first.
	Editor ports.MessageEditor
}

// New wraps the month tables' ports in dual read (when on), then in the archive.
func New(cfg Config, d Deps) Reads {
	r := Reads{Store: d.Store, Search: d.Search, Finder: d.Finder}
	editor := d.Editor
	if cfg.DualRead {
		src := dualread.NewSource(d.Legacy, d.Clock, cfg.StatusTTL, d.Log)
		r.Store, r.Search, r.Finder = dualread.NewStore(r.Store, src), dualread.NewSearch(r.Search, src), dualread.NewFinder(r.Finder, src)
		editor = dualread.NewEditor(editor, src, d.Copier)
	}
	r.Archived = archivereader.NewStore(r.Store, r.Search, d.Archive, d.States)
	r.Editor = archivereader.NewEditor(editor, d.States)
	return r
}
