package main

import (
	"log/slog"

	"go.uber.org/fx/fxevent"
)

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
