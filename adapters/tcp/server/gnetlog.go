package server

import (
	"context"
	"fmt"
	"log/slog"
)

// gnetLogger routes gnet's own log lines into the server's slog logger instead of gnet's
// default zap logger.
type gnetLogger struct{ log *slog.Logger }

func (l gnetLogger) logf(level slog.Level, format string, args ...any) {
	// gnet logs from its event loops, outside any request.
	ctx := context.Background()
	if l.log.Enabled(ctx, level) {
		l.log.Log(ctx, level, fmt.Sprintf(format, args...), "component", "gnet")
	}
}

func (l gnetLogger) Debugf(format string, args ...any) { l.logf(slog.LevelDebug, format, args...) }
func (l gnetLogger) Infof(format string, args ...any)  { l.logf(slog.LevelInfo, format, args...) }
func (l gnetLogger) Warnf(format string, args ...any)  { l.logf(slog.LevelWarn, format, args...) }
func (l gnetLogger) Errorf(format string, args ...any) { l.logf(slog.LevelError, format, args...) }

// Fatalf is an error here: gnet calls it only where it cannot set up a poller, and the
// process owner, not a library, decides to exit.
func (l gnetLogger) Fatalf(format string, args ...any) { l.logf(slog.LevelError, format, args...) }
