package main

import (
	"log/slog"
	"testing"

	"go.uber.org/fx"

	"github.com/imdhq/imd/adapters/config"
)

// The real graph (MySQL, Redis and the rest) assembles: every constructor finds what it takes.
// Nothing is opened, fx only resolves the types (the e2e tests run it).
func TestTheServerGraphAssembles(t *testing.T) {
	for _, dualRead := range []bool{false, true} {
		cfg := config.Default()
		cfg.Migration.DualRead = dualRead
		if err := fx.ValidateApp(fx.NopLogger, Options(cfg, slog.New(slog.DiscardHandler))); err != nil {
			t.Errorf("dual read %v: %v", dualRead, err)
		}
	}
}
