// Command imd is the IM server: it assembles the adapters around the core with fx and runs
// until SIGINT/SIGTERM, then stops in reverse order (seed 003 §18). app.go says where each
// part of the assembly is; cmd/internal/imdcli is its command line.
package main

import (
	"fmt"
	"log/slog"
	"os"

	"go.uber.org/fx"
	"go.uber.org/fx/fxevent"

	"github.com/imdhq/imd/adapters/config"
	"github.com/imdhq/imd/adapters/slogtint"
	"github.com/imdhq/imd/cmd/internal/imdcli"
)

// version is the release, stamped at link time: go build -ldflags "-X main.version=v1.2.3".
var version string

func main() {
	streams := imdcli.Streams{Out: os.Stdout, Err: os.Stderr}
	if err := imdcli.Run(os.Args[1:], os.Environ(), streams, version, serve); err != nil {
		fmt.Fprintln(os.Stderr, "imd:", err)
		os.Exit(1)
	}
}

// serve runs the server on cfg. app.Run exits non-zero when start or stop fails, or when a
// component that cannot go on asks for it (fx.Shutdowner with an exit code); fx logs why.
func serve(cfg config.Config) error {
	log := slogtint.New(cfg.Env, cfg.Log.Level, cfg.NodeID, os.Stderr)
	fx.New(
		// fx's own events at debug level, its failures as errors.
		fx.WithLogger(func() fxevent.Logger {
			l := &fxevent.SlogLogger{Logger: log}
			l.UseLogLevel(slog.LevelDebug)
			return l
		}),
		fx.StartTimeout(cfg.Shutdown.Timeout*3),
		fx.StopTimeout(cfg.Shutdown.Timeout),
		Options(cfg, log),
	).Run()
	return nil
}
