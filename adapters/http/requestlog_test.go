package http

import (
	"bufio"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/imdhq/imd/core/domain/apperr"
)

// TestRequestLogTraceAndUser: every request's log line carries a trace id, sent back to the
// client (the proxy's X-Request-Id when it is a sane one), and the authenticated caller.
func TestRequestLogTraceAndUser(t *testing.T) {
	s := newClientStack(t)
	tok := s.user("default", 7)
	tests := []struct {
		name      string
		headers   map[string]string
		wantTrace string // "" any fresh id
		wantUser  any    // nil: no user_id field
		wantCode  any    // nil: no code field
	}{
		{"authenticated, proxy id", map[string]string{"Authorization": "Bearer " + tok, "X-Request-Id": "0af7651916cd43dd8448eb211c80319c"},
			"0af7651916cd43dd8448eb211c80319c", 7.0, nil},
		{"authenticated, no id", map[string]string{"Authorization": "Bearer " + tok}, "", 7.0, nil},
		{"insane proxy id replaced", map[string]string{"Authorization": "Bearer " + tok, "X-Request-Id": `a"b c`}, "", 7.0, nil},
		{"unauthenticated", map[string]string{"Authorization": "Bearer nope"}, "", nil, float64(apperr.Unauthenticated)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s.logs.Reset()
			rec := s.doWith(http.MethodGet, "/api/v1/me", "", tt.headers)
			entry := requestLogEntry(t, s.harness)
			trace, _ := entry["trace_id"].(string)
			if trace == "" || rec.Header().Get("X-Request-Id") != trace || (tt.wantTrace != "" && trace != tt.wantTrace) ||
				(tt.wantTrace == "" && trace == tt.headers["X-Request-Id"]) {
				t.Errorf("trace_id %q, response X-Request-Id %q, want %q", trace, rec.Header().Get("X-Request-Id"), tt.wantTrace)
			}
			if entry["user_id"] != tt.wantUser || entry["code"] != tt.wantCode {
				t.Errorf("user_id %v code %v, want %v %v (%v)", entry["user_id"], entry["code"], tt.wantUser, tt.wantCode, entry)
			}
			if tt.wantUser != nil && entry["tenant"] != "default" {
				t.Errorf("tenant %v", entry["tenant"])
			}
		})
	}
}

// requestLogEntry is the "http request" line of the harness's log.
func requestLogEntry(t *testing.T, h *harness) map[string]any {
	t.Helper()
	sc := bufio.NewScanner(h.logs)
	for sc.Scan() {
		var entry map[string]any
		if err := json.Unmarshal(sc.Bytes(), &entry); err != nil {
			t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		if entry["msg"] == "http request" {
			return entry
		}
	}
	t.Fatalf("no request log line in %q", h.logs)
	return nil
}
