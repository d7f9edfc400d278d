// Command imd is the IM server: it assembles the adapters around the core with fx and runs
// until SIGINT/SIGTERM, then stops in reverse order (seed 003 §18). app.go says where each
// part of the assembly is.
package main

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"

	"go.uber.org/fx"
	"go.uber.org/fx/fxevent"

	"github.com/imdhq/imd/adapters/config"
	httpapi "github.com/imdhq/imd/adapters/http"
	"github.com/imdhq/imd/adapters/slogtint"
	"github.com/imdhq/imd/cmd/internal/buildinfo"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "imd:", err)
		os.Exit(1)
	}
}

// version is the release, stamped at link time: go build -ldflags "-X main.version=v1.2.3".
var version string

func run(args []string) error {
	if len(args) > 0 && args[0] == "probe" {
		if len(args) != 2 {
			return errors.New("usage: imd probe URL (e.g. http://127.0.0.1:8080/readyz)")
		}
		return httpapi.Probe(args[1])
	}
	check := len(args) > 0 && args[0] == "check"
	if check {
		args = args[1:]
	}
	flags := flag.NewFlagSet("imd", flag.ContinueOnError)
	flags.Usage = func() {
		fmt.Fprintln(flags.Output(), "usage: imd [--config F]        run the server\n       imd check [--config F]  validate the configuration and print it, secrets masked\n       imd probe URL           exit 0 when URL answers 2xx (container healthchecks)\n       imd --version")
		flags.PrintDefaults()
	}
	path := flags.String("config", os.Getenv("IMD_CONFIG"), "YAML config file (env IMD_CONFIG); IMD_* variables override keys, IMD_<KEY>_FILE reads a secret from a file")
	showVersion := flags.Bool("version", false, "print the build and exit")
	if err := flags.Parse(args); err != nil {
		return err
	}
	if *showVersion {
		fmt.Println("imd", buildinfo.Read(version))
		return nil
	}
	cfg, err := config.Load(*path, os.Environ())
	if err != nil {
		return err
	}
	if check {
		out, err := cfg.Effective()
		if err != nil {
			return err
		}
		_, err = os.Stdout.Write(out)
		return err
	}
	log := slogtint.New(cfg.Env, cfg.Log.Level, cfg.NodeID, os.Stderr)

	// app.Run exits non-zero when start or stop fails, or when a component that cannot go on
	// asks for it (fx.Shutdowner with an exit code); fx logs why.
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
