package http

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/usecase/admin"
	"github.com/imdhq/imd/core/usecase/directory"
)

const adminKey = "test-admin-key-0123456789"

// harness serves requests straight into the Echo router and keeps the request log.
type harness struct {
	t    *testing.T
	srv  *Server
	logs *bytes.Buffer
}

func newHarness(t *testing.T, cfg Config, d Deps) *harness {
	t.Helper()
	logs := &bytes.Buffer{}
	log := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	if d.Admin == nil {
		// Validation runs before any port is used, so a directory without ports will do.
		d.Admin = admin.New(admin.Deps{Social: directory.New(directory.Deps{}), Tenants: func(name string) bool { return name == "default" }})
	}
	return &harness{t: t, srv: New(cfg, d, log), logs: logs}
}

// do sends a request with the admin key and returns the recorder.
func (h *harness) do(method, path, body string) *httptest.ResponseRecorder {
	h.t.Helper()
	return h.doWith(method, path, body, map[string]string{"Authorization": "Bearer " + adminKey})
}

func (h *harness) doWith(method, path, body string, headers map[string]string) *httptest.ResponseRecorder {
	h.t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, path, r)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.srv.echo.ServeHTTP(rec, req)
	return rec
}

// wantError checks an error response: its status and {"code","msg"} body.
func wantError(t *testing.T, rec *httptest.ResponseRecorder, status int, code apperr.Code) {
	t.Helper()
	if rec.Code != status {
		t.Errorf("status = %d, want %d (body %s)", rec.Code, status, rec.Body)
	}
	var body map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatalf("error body %q is not JSON: %v", rec.Body, err)
	}
	if got, _ := body["code"].(float64); apperr.Code(got) != code {
		t.Errorf("code = %v, want %d (body %s)", body["code"], code, rec.Body)
	}
	if msg, _ := body["msg"].(string); msg == "" {
		t.Errorf("error body %s has no msg", rec.Body)
	}
}

func TestStatusOfEveryCode(t *testing.T) {
	tests := []struct {
		code apperr.Code
		want int
	}{
		{apperr.InvalidArgument, 400},
		{apperr.Unauthenticated, 401},
		{apperr.Forbidden, 403},
		{apperr.NotFound, 404},
		{apperr.Conflict, 409},
		{apperr.TooLarge, 413},
		{apperr.RateLimited, 429},
		{apperr.Internal, 500},
		{apperr.Busy, 503},
		{apperr.Code(12345), 500},
	}
	for _, tt := range tests {
		if got := statusOf(tt.code); got != tt.want {
			t.Errorf("statusOf(%d) = %d, want %d", tt.code, got, tt.want)
		}
	}
}

func TestAdminKey(t *testing.T) {
	tests := []struct {
		name   string
		key    string // configured
		header string // Authorization sent; "-" sends none
		want   int
	}{
		{"right key", adminKey, "Bearer " + adminKey, http.StatusOK},
		{"scheme is case-insensitive", adminKey, "bearer " + adminKey, http.StatusOK},
		{"no header", adminKey, "-", http.StatusUnauthorized},
		{"wrong key", adminKey, "Bearer nope", http.StatusUnauthorized},
		{"key prefix", adminKey, "Bearer " + adminKey[:10], http.StatusUnauthorized},
		{"key with suffix", adminKey, "Bearer " + adminKey + "x", http.StatusUnauthorized},
		{"basic scheme", adminKey, "Basic " + adminKey, http.StatusUnauthorized},
		{"bare key", adminKey, adminKey, http.StatusUnauthorized},
		{"empty bearer", adminKey, "Bearer ", http.StatusUnauthorized},
		{"no key configured", "", "Bearer ", http.StatusUnauthorized},
		{"no key configured, empty token", "", "Bearer  ", http.StatusUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Advance with a malformed month fails in validation, before any store is used,
			// so 400 here proves the key was accepted.
			h := newHarness(t, Config{AdminKey: tt.key}, Deps{})
			headers := map[string]string{}
			if tt.header != "-" {
				headers["Authorization"] = tt.header
			}
			rec := h.doWith(http.MethodPost, "/admin/v1/tenants/default/shards/advance", `{"month":"2026-11"}`, headers)
			if tt.want == http.StatusOK {
				wantError(t, rec, http.StatusBadRequest, apperr.InvalidArgument)
				return
			}
			wantError(t, rec, http.StatusUnauthorized, apperr.Unauthenticated)
			if rec.Header().Get("WWW-Authenticate") == "" {
				t.Error("401 without WWW-Authenticate")
			}
		})
	}
}

func TestEveryAdminRouteNeedsTheKey(t *testing.T) {
	h := newHarness(t, Config{AdminKey: adminKey}, Deps{})
	for _, r := range adminRoutes() {
		t.Run(r.method+" "+r.path, func(t *testing.T) {
			rec := h.doWith(r.method, r.path, `{}`, nil)
			wantError(t, rec, http.StatusUnauthorized, apperr.Unauthenticated)
		})
	}
	// Unknown admin paths do not reveal whether they exist before authentication.
	wantError(t, h.doWith(http.MethodGet, "/admin/v1/nothing", "", nil), http.StatusUnauthorized, apperr.Unauthenticated)
	wantError(t, h.do(http.MethodGet, "/admin/v1/nothing", ""), http.StatusNotFound, apperr.NotFound)
}

func TestUnknownTenantIsNotFound(t *testing.T) {
	h := newHarness(t, Config{AdminKey: adminKey}, Deps{})
	for _, r := range adminRoutes() {
		t.Run(r.method+" "+r.path, func(t *testing.T) {
			path := strings.Replace(r.path, "/tenants/default/", "/tenants/other/", 1)
			wantError(t, h.do(r.method, path, `{}`), http.StatusNotFound, apperr.NotFound)
		})
	}
}

type endpoint struct{ method, path string }

func adminRoutes() []endpoint {
	return []endpoint{
		{http.MethodPost, "/admin/v1/tenants/default/users"},
		{http.MethodPost, "/admin/v1/tenants/default/tokens"},
		{http.MethodPost, "/admin/v1/tenants/default/friendships"},
		{http.MethodPost, "/admin/v1/tenants/default/groups"},
		{http.MethodPost, "/admin/v1/tenants/default/groups/5/members"},
		{http.MethodGet, "/admin/v1/tenants/default/topics/grp_5/messages/1"},
		{http.MethodGet, "/admin/v1/tenants/default/topics/grp_5/messages"},
		{http.MethodGet, "/admin/v1/tenants/default/shards"},
		{http.MethodPost, "/admin/v1/tenants/default/topics/grp_5/route/rebuild"},
		{http.MethodPost, "/admin/v1/tenants/default/shards/advance"},
	}
}

func TestInvalidRequestsAreRejectedBeforeStorage(t *testing.T) {
	big := `{"user_id":1,"nickname":"` + strings.Repeat("x", maxBodyBytes) + `"}`
	tests := []struct {
		name         string
		method, path string
		body         string
		status       int
		code         apperr.Code
	}{
		{"malformed JSON", "POST", "/users", `{"user_id":`, 400, apperr.InvalidArgument},
		{"not JSON", "POST", "/users", `user_id=1`, 400, apperr.InvalidArgument},
		{"empty body", "POST", "/users", ``, 400, apperr.InvalidArgument},
		{"array body", "POST", "/users", `[1]`, 400, apperr.InvalidArgument},
		{"two objects", "POST", "/users", `{"user_id":1}{"user_id":2}`, 400, apperr.InvalidArgument},
		{"id as string", "POST", "/users", `{"user_id":"1"}`, 400, apperr.InvalidArgument},
		{"id as float", "POST", "/users", `{"user_id":1.5}`, 400, apperr.InvalidArgument},
		{"id overflows", "POST", "/users", `{"user_id":99999999999999999999}`, 400, apperr.InvalidArgument},
		{"missing user_id", "POST", "/users", `{"nickname":"a"}`, 400, apperr.InvalidArgument},
		{"negative user_id", "POST", "/users", `{"user_id":-4}`, 400, apperr.InvalidArgument},
		{"nickname too long", "POST", "/users", `{"user_id":1,"nickname":"` + strings.Repeat("n", 65) + `"}`, 400, apperr.InvalidArgument},
		{"body over 1 MiB", "POST", "/users", big, 413, apperr.TooLarge},
		{"negative ttl", "POST", "/tokens", `{"user_id":1,"ttl_seconds":-1}`, 400, apperr.InvalidArgument},
		{"ttl over a year", "POST", "/tokens", `{"user_id":1,"ttl_seconds":31536001}`, 400, apperr.InvalidArgument},
		{"ttl would overflow", "POST", "/tokens", `{"user_id":1,"ttl_seconds":9223372036854775807}`, 400, apperr.InvalidArgument},
		{"befriend self", "POST", "/friendships", `{"user_a":3,"user_b":3}`, 400, apperr.InvalidArgument},
		{"members not array", "POST", "/groups", `{"group_id":1,"owner":1,"members":5}`, 400, apperr.InvalidArgument},
		{"group id zero", "POST", "/groups", `{"group_id":0,"owner":1}`, 400, apperr.InvalidArgument},
		{"bad group id in path", "POST", "/groups/abc/members", `{"user_ids":[1]}`, 400, apperr.InvalidArgument},
		{"zero group id in path", "POST", "/groups/0/members", `{"user_ids":[1]}`, 400, apperr.InvalidArgument},
		{"no user ids", "POST", "/groups/5/members", `{"user_ids":[]}`, 400, apperr.InvalidArgument},
		{"bad topic", "GET", "/topics/room_1/messages/1", ``, 400, apperr.InvalidArgument},
		{"non-canonical topic", "GET", "/topics/grp_01/messages/1", ``, 400, apperr.InvalidArgument},
		{"p2p topic out of order", "GET", "/topics/p2p_9_3/messages", ``, 400, apperr.InvalidArgument},
		{"bad seq", "GET", "/topics/grp_5/messages/x", ``, 400, apperr.InvalidArgument},
		{"zero seq", "GET", "/topics/grp_5/messages/0", ``, 400, apperr.InvalidArgument},
		{"before and since", "GET", "/topics/grp_5/messages?before=10&since=2", ``, 400, apperr.InvalidArgument},
		{"bad before", "GET", "/topics/grp_5/messages?before=ten", ``, 400, apperr.InvalidArgument},
		{"negative since", "GET", "/topics/grp_5/messages?since=-1", ``, 400, apperr.InvalidArgument},
		{"bad limit", "GET", "/topics/grp_5/messages?limit=1e3", ``, 400, apperr.InvalidArgument},
		{"limit too big", "GET", "/topics/grp_5/messages?limit=201", ``, 400, apperr.InvalidArgument},
		{"rebuild bad topic", "POST", "/topics/grp_x/route/rebuild", ``, 400, apperr.InvalidArgument},
		{"advance bad month", "POST", "/shards/advance", `{"month":"202613"}`, 400, apperr.InvalidArgument},
		{"advance month as number", "POST", "/shards/advance", `{"month":202611}`, 400, apperr.InvalidArgument},
		{"advance no month", "POST", "/shards/advance", `{}`, 400, apperr.InvalidArgument},
		{"wrong method", "DELETE", "/users", ``, 404, apperr.NotFound},
	}
	h := newHarness(t, Config{AdminKey: adminKey}, Deps{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := h.do(tt.method, "/admin/v1/tenants/default"+tt.path, tt.body)
			wantError(t, rec, tt.status, tt.code)
		})
	}
}

func TestTypeErrorNamesTheField(t *testing.T) {
	h := newHarness(t, Config{AdminKey: adminKey}, Deps{})
	rec := h.do(http.MethodPost, "/admin/v1/tenants/default/users", `{"user_id":"7"}`)
	if !strings.Contains(rec.Body.String(), "user_id must be an integer") {
		t.Errorf("body %s does not name the field", rec.Body)
	}
}

func TestPanicIsInternalError(t *testing.T) {
	h := newHarness(t, Config{AdminKey: adminKey}, Deps{
		Admin: admin.New(admin.Deps{Tenants: func(string) bool { panic("tenant table exploded") }}),
	})
	rec := h.do(http.MethodGet, "/admin/v1/tenants/default/shards", "")
	wantError(t, rec, http.StatusInternalServerError, apperr.Internal)
	if strings.Contains(rec.Body.String(), "exploded") {
		t.Errorf("panic value leaked to the client: %s", rec.Body)
	}
	if !strings.Contains(h.logs.String(), "tenant table exploded") {
		t.Error("panic was not logged")
	}
	// The server keeps serving.
	if rec := h.do(http.MethodGet, "/healthz", ""); rec.Code != http.StatusOK {
		t.Errorf("healthz after panic = %d", rec.Code)
	}
}

func TestRoutingErrorsAreJSON(t *testing.T) {
	h := newHarness(t, Config{AdminKey: adminKey}, Deps{})
	wantError(t, h.do(http.MethodGet, "/nope", ""), http.StatusNotFound, apperr.NotFound)
	wantError(t, h.do(http.MethodPost, "/healthz", ""), http.StatusBadRequest, apperr.InvalidArgument)
	if rec := h.do(http.MethodHead, "/nope", ""); rec.Code != http.StatusNotFound || rec.Body.Len() != 0 {
		t.Errorf("HEAD /nope = %d with %d body bytes, want 404 and none", rec.Code, rec.Body.Len())
	}
}

func TestHealthz(t *testing.T) {
	h := newHarness(t, Config{}, Deps{})
	rec := h.doWith(http.MethodGet, "/healthz", "", nil)
	if rec.Code != http.StatusOK || strings.TrimSpace(rec.Body.String()) != `{"status":"ok"}` {
		t.Errorf("healthz = %d %s", rec.Code, rec.Body)
	}
}

func TestReadyz(t *testing.T) {
	depErr := errors.New("redis: connection refused")
	listenerUp := func() error { return nil }
	listenerDown := func() error { return errors.New("tcp listener stopped accepting") }
	tests := []struct {
		name      string
		ready     bool
		probe     func(context.Context) error
		listeners []Listening
		want      int
	}{
		{"not started", false, nil, nil, http.StatusServiceUnavailable},
		{"not started, deps fine", false, func(context.Context) error { return nil }, nil, http.StatusServiceUnavailable},
		{"started, no probe", true, nil, nil, http.StatusOK},
		{"started, listeners accept", true, nil, []Listening{listenerUp, listenerUp}, http.StatusOK},
		{"started, a listener stopped accepting", true, func(context.Context) error { return nil }, []Listening{listenerUp, listenerDown}, http.StatusServiceUnavailable},
		{"started, deps fine", true, func(context.Context) error { return nil }, nil, http.StatusOK},
		{"started, dependency down", true, func(context.Context) error { return depErr }, nil, http.StatusServiceUnavailable},
		{"started, probe has a deadline", true, func(ctx context.Context) error {
			if _, ok := ctx.Deadline(); !ok {
				return errors.New("no deadline")
			}
			return nil
		}, nil, http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, Config{}, Deps{Ready: tt.probe, Listeners: tt.listeners})
			if tt.ready {
				_ = h.srv.MarkReady(t.Context())
			}
			rec := h.doWith(http.MethodGet, "/readyz", "", nil)
			if rec.Code != tt.want {
				t.Errorf("readyz = %d %s, want %d", rec.Code, rec.Body, tt.want)
			}
			if rec.Code != http.StatusOK && strings.Contains(rec.Body.String(), "refused") {
				t.Errorf("dependency error leaked: %s", rec.Body)
			}
		})
	}
}

func TestMetricsRoute(t *testing.T) {
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "tcp_connections 3\n")
	})
	h := newHarness(t, Config{}, Deps{Metrics: metrics})
	rec := h.doWith(http.MethodGet, "/metrics", "", nil)
	if rec.Code != http.StatusOK || rec.Body.String() != "tcp_connections 3\n" {
		t.Errorf("metrics = %d %q", rec.Code, rec.Body)
	}
	wantError(t, newHarness(t, Config{}, Deps{}).doWith(http.MethodGet, "/metrics", "", nil), http.StatusNotFound, apperr.NotFound)
}

func TestRequestLog(t *testing.T) {
	tests := []struct {
		name       string
		remoteAddr string
		realIP     string
		wantIP     string
	}{
		{"from the local nginx", "127.0.0.1:5555", "203.0.113.9", "203.0.113.9"},
		{"from the local nginx over ipv6", "[::1]:5555", "2001:db8::1", "2001:db8::1"},
		{"local, no header", "127.0.0.1:5555", "", "127.0.0.1"},
		{"forged by a remote peer", "198.51.100.7:4000", "203.0.113.9", "198.51.100.7"},
		{"forged from a private network", "10.1.2.3:4000", "203.0.113.9", "10.1.2.3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, Config{AdminKey: adminKey}, Deps{})
			req := httptest.NewRequest(http.MethodGet, "/admin/v1/tenants/nobody/shards", nil)
			req.RemoteAddr = tt.remoteAddr
			if tt.realIP != "" {
				req.Header.Set("X-Real-IP", tt.realIP)
			}
			req.Header.Set("Authorization", "Bearer "+adminKey)
			h.srv.echo.ServeHTTP(httptest.NewRecorder(), req)
			var entry map[string]any
			if err := json.Unmarshal(h.logs.Bytes(), &entry); err != nil {
				t.Fatalf("log %q: %v", h.logs, err)
			}
			want := map[string]any{"msg": "http request", "method": "GET", "path": "/admin/v1/tenants/nobody/shards", "status": 404.0, "real_ip": tt.wantIP, "code": float64(apperr.NotFound)}
			for k, v := range want {
				if entry[k] != v {
					t.Errorf("log %s = %v, want %v", k, entry[k], v)
				}
			}
			if _, ok := entry["latency"]; !ok {
				t.Error("log has no latency")
			}
			if strings.Contains(h.logs.String(), adminKey) {
				t.Error("admin key logged")
			}
		})
	}
}

func TestStartBindsThenStopDrains(t *testing.T) {
	h := newHarness(t, Config{Addr: "127.0.0.1:0"}, Deps{})
	ctx := context.Background()
	if err := h.srv.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	addr := h.srv.Addr()
	if strings.HasSuffix(addr, ":0") {
		t.Fatalf("Addr = %s, want the bound port", addr)
	}
	res, err := http.Get("http://" + addr + "/healthz")
	if err != nil {
		t.Fatalf("GET /healthz right after Start: %v", err)
	}
	_ = res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Errorf("healthz = %d", res.StatusCode)
	}
	_ = h.srv.MarkReady(ctx)
	stopCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := h.srv.Stop(stopCtx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if _, err := http.Get("http://" + addr + "/healthz"); err == nil {
		t.Error("server still answers after Stop")
	}
	if h.srv.ready.Load() {
		t.Error("still ready after Stop")
	}
}

func TestStartFailsWhenThePortIsTaken(t *testing.T) {
	first := newHarness(t, Config{Addr: "127.0.0.1:0"}, Deps{})
	if err := first.srv.Start(context.Background()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = first.srv.Stop(context.Background()) })
	second := newHarness(t, Config{Addr: first.srv.Addr()}, Deps{})
	if err := second.srv.Start(context.Background()); err == nil {
		t.Error("second Start on the same port succeeded")
	}
	if err := second.srv.Stop(context.Background()); err != nil {
		t.Errorf("Stop of a server that never started: %v", err)
	}
}

// TestAdminListenerOfItsOwn: with http.admin_addr the operator's routes (admin API, console,
// profiles) are served there and the client listener answers them 404, while the client API
// stays on the client listener only; without it one listener serves both (issue 33).
func TestAdminListenerOfItsOwn(t *testing.T) {
	operator := []string{"/admin/v1/tenants", "/admin/v1/tenants/default/users/1/profile", "/console/", "/debug/pprof/"}
	client := []string{"/api/v1/me", "/openapi.yaml"}
	for _, tc := range []struct {
		name      string
		adminAddr string
	}{{"one listener", ""}, {"admin listener", "127.0.0.1:0"}} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, Config{Addr: "127.0.0.1:0", AdminAddr: tc.adminAddr, AdminKey: adminKey}, Deps{})
			if err := h.srv.Start(t.Context()); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = h.srv.Stop(context.Background()) })
			split := tc.adminAddr != ""
			if got := h.srv.AdminAddr() != ""; got != split {
				t.Fatalf("AdminAddr() = %q", h.srv.AdminAddr())
			}
			served := func(addr, path string) bool {
				t.Helper()
				resp, err := http.Get("http://" + addr + path)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				return resp.StatusCode != http.StatusNotFound
			}
			for _, path := range operator {
				if got := served(h.srv.Addr(), path); got == split {
					t.Errorf("client listener serves %s: %v, want %v", path, got, !split)
				}
				if split && !served(h.srv.AdminAddr(), path) {
					t.Errorf("admin listener does not serve %s", path)
				}
			}
			for _, path := range client {
				if !served(h.srv.Addr(), path) {
					t.Errorf("client listener does not serve %s", path)
				}
				if split && served(h.srv.AdminAddr(), path) {
					t.Errorf("admin listener serves %s", path)
				}
			}
			for _, addr := range []string{h.srv.Addr(), h.srv.AdminAddr()} {
				if addr != "" && !served(addr, "/healthz") {
					t.Errorf("%s does not answer /healthz", addr)
				}
			}
		})
	}
}
