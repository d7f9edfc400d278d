package main

import (
	"context"
	"log/slog"
	"time"

	"go.uber.org/fx"

	"github.com/imdhq/imd/adapters/mysql"
	"github.com/imdhq/imd/core/seqholes"
	"github.com/imdhq/imd/core/tenants"
	"github.com/imdhq/imd/ports"
)

// seqHoleSweepEvery is how often a node looks for seq holes. Every node sweeps: two closing
// the same seq is harmless, the second finds it taken.
const seqHoleSweepEvery = time.Minute

// SeqHoles runs the seq-hole sweeper over every tenant (DESIGN §4: holes end as tombstones).
func SeqHoles() fx.Option {
	return fx.Options(
		fx.Provide(
			func(s *mysql.MessageStore) ports.SeqHoles { return s },
			newSeqHoleSweeper,
		),
		fx.Invoke(runSeqHoles),
	)
}

type seqHoleParams struct {
	fx.In
	Holes   ports.SeqHoles
	Store   ports.MessageStore
	Shards  ports.ShardStore
	IDs     ports.IDGenerator
	Clock   ports.Clock
	Metrics ports.Metrics
	Log     *slog.Logger
}

func newSeqHoleSweeper(p seqHoleParams) *seqholes.Sweeper {
	return seqholes.New(seqholes.Config{}, seqholes.Deps{
		Holes: p.Holes, Store: p.Store, Shards: p.Shards, IDs: p.IDs, Clock: p.Clock, Metrics: p.Metrics, Log: p.Log,
	})
}

func runSeqHoles(lc fx.Lifecycle, s *seqholes.Sweeper, reg *tenants.Registry) {
	var cancel context.CancelFunc
	done := make(chan struct{})
	lc.Append(fx.Hook{
		OnStart: func(context.Context) error {
			var ctx context.Context
			ctx, cancel = context.WithCancel(context.Background())
			go func() {
				defer close(done)
				s.RunEvery(ctx, reg.Names, seqHoleSweepEvery)
			}()
			return nil
		},
		OnStop: func(context.Context) error {
			cancel()
			<-done
			return nil
		},
	})
}
