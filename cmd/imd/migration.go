package main

import (
	"log/slog"

	"go.uber.org/fx"

	"github.com/imdhq/imd/adapters/config"
	"github.com/imdhq/imd/core/dualread"
	"github.com/imdhq/imd/core/migration"
	"github.com/imdhq/imd/ports"
)

// Migration wires the legacy single-table migration (seed 000 §9): the job, its supervisor,
// and — with migration.dual_read on — the dual-read decorators of the ports every query path
// reads through, so history, search, READ and admin reads merge the legacy table unchanged.
func Migration(cfg config.Config) fx.Option {
	opts := []fx.Option{
		fx.Provide(config.Config.MigrationJob, config.Config.MigrationDualRead, inject(migration.New), newMessageEditor),
	}
	if cfg.Migration.DualRead {
		opts = append(opts,
			fx.Provide(func(l ports.LegacyMessages, c ports.Clock, log *slog.Logger) *dualread.Source {
				return dualread.NewSource(l, c, cfg.Migration.StatusTTL, log)
			}),
			fx.Decorate(
				func(s ports.MessageStore, src *dualread.Source) ports.MessageStore { return dualread.NewStore(s, src) },
				func(s ports.MessageSearch, src *dualread.Source) ports.MessageSearch {
					return dualread.NewSearch(s, src)
				},
				func(f ports.MessageFinder, src *dualread.Source) ports.MessageFinder {
					return dualread.NewFinder(f, src)
				},
			),
		)
	}
	return fx.Options(opts...)
}

type editorParams struct {
	fx.In
	Base baseEditor
	Jobs dualread.Copier
	// Source exists with dual read on: a legacy message is then copied before it is changed.
	Source *dualread.Source `optional:"true"`
}

// newMessageEditor is the MySQL editor, behind dual read's copy-on-change when it is on. Built
// here rather than decorated, since other wiring decorates the editor already (fx decorates a
// type once per scope).
func newMessageEditor(p editorParams) ports.MessageEditor {
	e := p.Base.MessageEditor
	if p.Source == nil {
		return e
	}
	return dualread.NewEditor(e, p.Source, p.Jobs)
}
