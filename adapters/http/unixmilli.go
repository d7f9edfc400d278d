package http

import "time"

// unixMilli is t in Unix ms, 0 for the zero time (whose UnixMilli is a large negative number).
func unixMilli(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}
