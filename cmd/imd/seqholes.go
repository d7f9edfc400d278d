package main

import (
	"log/slog"

	"go.uber.org/fx"

	"github.com/imdhq/imd/adapters/config"
	"github.com/imdhq/imd/core/seqholes"
	"github.com/imdhq/imd/ports"
)

type seqHoleParams struct {
	fx.In
	Cfg     config.Config
	Holes   ports.SeqHoles
	Store   ports.MessageStore
	Shards  ports.ShardStore
	IDs     ports.IDGenerator
	Clock   ports.Clock
	Metrics ports.Metrics
	Log     *slog.Logger
}

// newSeqHoleSweeper builds the sweeper the runtime's seq_holes loop runs.
func newSeqHoleSweeper(p seqHoleParams) *seqholes.Sweeper {
	return seqholes.New(seqholes.Config{After: p.Cfg.Shard.SeqHoleAfter}, seqholes.Deps{
		Holes: p.Holes, Store: p.Store, Shards: p.Shards, IDs: p.IDs, Clock: p.Clock, Metrics: p.Metrics, Log: p.Log,
	})
}
