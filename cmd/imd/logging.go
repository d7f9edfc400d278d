package main

import (
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/lmittmann/tint"
	"go.uber.org/fx/fxevent"
)

// newLogger logs colored text in dev and JSON in production; every record carries node_id.
func newLogger(env, level string, nodeID int, w io.Writer) *slog.Logger {
	var lvl slog.Level
	switch strings.ToLower(level) {
	case "debug":
		lvl = slog.LevelDebug
	case "warn":
		lvl = slog.LevelWarn
	case "error":
		lvl = slog.LevelError
	default:
		lvl = slog.LevelInfo
	}
	var h slog.Handler
	if env == "dev" {
		h = tint.NewHandler(w, &tint.Options{Level: lvl, TimeFormat: time.TimeOnly})
	} else {
		h = slog.NewJSONHandler(w, &slog.HandlerOptions{Level: lvl})
	}
	return slog.New(h).With("node_id", nodeID)
}

// fxLogger reports fx's own events through slog, at debug level except failures.
type fxLogger struct{ log *slog.Logger }

func (l fxLogger) LogEvent(e fxevent.Event) {
	switch e := e.(type) {
	case *fxevent.OnStartExecuted:
		if e.Err != nil {
			l.log.Error("start hook failed", "callee", e.FunctionName, "err", e.Err)
		} else {
			l.log.Debug("started", "callee", e.FunctionName, "runtime", e.Runtime)
		}
	case *fxevent.OnStopExecuted:
		if e.Err != nil {
			l.log.Error("stop hook failed", "callee", e.FunctionName, "err", e.Err)
		} else {
			l.log.Debug("stopped", "callee", e.FunctionName, "runtime", e.Runtime)
		}
	case *fxevent.Started:
		if e.Err != nil {
			l.log.Error("start failed", "err", e.Err)
		}
	case *fxevent.Invoked:
		if e.Err != nil {
			l.log.Error("invoke failed", "function", e.FunctionName, "err", e.Err)
		}
	case *fxevent.Provided:
		if e.Err != nil {
			l.log.Error("provide failed", "err", e.Err)
		}
	}
}
