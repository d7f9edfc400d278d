// Package slogtint builds the process logger on log/slog: colored text through tint in dev,
// JSON in production.
package slogtint

import (
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/lmittmann/tint"
)

// New logs colored text when env is dev and JSON otherwise, at level (debug, info, warn,
// error; info when unknown); every record carries node_id.
func New(env, level string, nodeID int, w io.Writer) *slog.Logger {
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
