// Command imd is the IM server: it assembles the adapters around the core with fx and runs
// until SIGINT/SIGTERM, then stops in reverse order (seed 003 §18).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"go.uber.org/fx"
	"go.uber.org/fx/fxevent"

	"imd/adapters/config"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "imd:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) > 0 && args[0] == "probe" {
		return probe(args[1:])
	}
	flags := flag.NewFlagSet("imd", flag.ContinueOnError)
	path := flags.String("config", os.Getenv("IMD_CONFIG"), "YAML config file (env IMD_CONFIG); IMD_* variables override keys")
	if err := flags.Parse(args); err != nil {
		return err
	}
	cfg, err := config.Load(*path, os.Environ())
	if err != nil {
		return err
	}
	log := newLogger(cfg.Env, cfg.Log.Level, cfg.NodeID, os.Stderr)

	app := fx.New(
		fx.WithLogger(func() fxevent.Logger { return fxLogger{log} }),
		fx.StartTimeout(cfg.Shutdown.Timeout*3),
		fx.StopTimeout(cfg.Shutdown.Timeout),
		Options(cfg, log),
	)
	if err := app.Err(); err != nil {
		return fmt.Errorf("assemble: %w", err)
	}

	startCtx, cancel := context.WithTimeout(context.Background(), cfg.Shutdown.Timeout*3)
	defer cancel()
	if err := app.Start(startCtx); err != nil {
		return fmt.Errorf("start: %w", err)
	}
	log.Info("imd ready", "tcp", cfg.TCP.Addr, "http", cfg.HTTP.Addr, "tenants", cfg.TenantNames())

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	got := <-sig
	log.Info("shutting down", "signal", got.String())

	stopCtx, cancelStop := context.WithTimeout(context.Background(), cfg.Shutdown.Timeout)
	defer cancelStop()
	if err := app.Stop(stopCtx); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("stop: %w", err)
	}
	log.Info("imd stopped")
	return nil
}
