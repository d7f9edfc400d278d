package fxdeps

import (
	"errors"
	"strings"
	"testing"

	"go.uber.org/fx"
)

type (
	injectConfig struct{ Size int }
	injectDeps   struct {
		Name    string
		Missing *int     `optional:"true"`
		Extras  []string `group:"extras"`
	}
	injected struct {
		cfg  injectConfig
		deps injectDeps
	}
)

func newInjected(cfg injectConfig, d injectDeps) (*injected, error) {
	if cfg.Size < 0 {
		return nil, errors.New("negative size")
	}
	return &injected{cfg: cfg, deps: d}, nil
}

func TestInjectFillsDepsFromTheGraph(t *testing.T) {
	var got *injected
	app := fx.New(fx.NopLogger,
		fx.Supply(injectConfig{Size: 3}, "node-1"),
		fx.Provide(
			Inject(newInjected),
			fx.Annotate(func() string { return "x" }, fx.ResultTags(`group:"extras"`)),
		),
		fx.Populate(&got),
	)
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	if got.cfg.Size != 3 || got.deps.Name != "node-1" || got.deps.Missing != nil || strings.Join(got.deps.Extras, ",") != "x" {
		t.Errorf("built %+v", got)
	}
}

func TestGatherBuildsAStructFromTheGraph(t *testing.T) {
	var got injectConfig
	app := fx.New(fx.NopLogger, fx.Supply(7), fx.Provide(Gather[injectConfig]()), fx.Populate(&got))
	if err := app.Err(); err != nil || got.Size != 7 {
		t.Errorf("gathered %+v, %v", got, err)
	}
}

func TestInjectReportsWhatIsMissingAndWhatFails(t *testing.T) {
	var got *injected
	missing := fx.New(fx.NopLogger, fx.Supply(injectConfig{}), fx.Provide(Inject(newInjected)), fx.Populate(&got))
	if err := missing.Err(); err == nil || !strings.Contains(err.Error(), "string") {
		t.Errorf("without a string in the graph: %v", err)
	}
	failing := fx.New(fx.NopLogger, fx.Supply(injectConfig{Size: -1}, "n"), fx.Provide(Inject(newInjected)), fx.Populate(&got))
	if err := failing.Err(); err == nil || !strings.Contains(err.Error(), "negative size") {
		t.Errorf("a failing constructor: %v", err)
	}
}

func TestViewIsTheValueAsANarrowerPort(t *testing.T) {
	type (
		namer interface{ Name() string }
		sizer interface{ Len() int }
	)
	if _, err := View[namer](any(strings.NewReader(""))); err == nil {
		t.Error("a reader viewed as a namer")
	}
	s, err := View[sizer](strings.NewReader("abc"))
	if err != nil || s.Len() != 3 {
		t.Errorf("viewed %v, %v", s, err)
	}
}
