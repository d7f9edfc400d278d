package server

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/imdhq/imd/clients/go/frame"
	"github.com/imdhq/imd/clients/go/wire"
	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/auth"
)

// testTime is the fake clock's time; server_time answers carry it.
var testTime = time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC)

type fixedClock struct{ t time.Time }

func (c fixedClock) Now() time.Time { return c.t }

// fakeTokens accepts "tok-<tenant>-<user>". When gate is set, Verify signals entered and
// waits for gate, so a test can hold a worker busy.
type fakeTokens struct {
	entered chan struct{}
	gate    chan struct{}
	// passed counts the calls let through the gate.
	passed atomic.Int64
}

func (f *fakeTokens) Authenticate(_ context.Context, token string) (auth.Identity, error) {
	if f.gate != nil {
		f.entered <- struct{}{}
		<-f.gate
		f.passed.Add(1)
	}
	parts := strings.Split(token, "-")
	if len(parts) != 3 || parts[0] != "tok" {
		return auth.Identity{}, apperr.New(apperr.Unauthenticated, "bad token")
	}
	user, err := strconv.ParseInt(parts[2], 10, 64)
	if err != nil {
		return auth.Identity{}, apperr.New(apperr.Unauthenticated, "bad token")
	}
	return auth.Identity{Tenant: parts[1], UserID: user}, nil
}

func token(user int64) string { return "tok-default-" + strconv.FormatInt(user, 10) }

// fakeMetrics counts by name, labels ignored.
type fakeMetrics struct {
	mu     sync.Mutex
	counts map[string]float64
	gauges map[string]float64
}

func newFakeMetrics() *fakeMetrics {
	return &fakeMetrics{counts: map[string]float64{}, gauges: map[string]float64{}}
}

func (m *fakeMetrics) Inc(name string, _ ...string) {
	m.mu.Lock()
	m.counts[name]++
	m.mu.Unlock()
}

func (m *fakeMetrics) Add(name string, n float64, _ ...string) {
	m.mu.Lock()
	m.counts[name] += n
	m.mu.Unlock()
}

func (m *fakeMetrics) Observe(name string, _ float64, _ ...string) {
	m.mu.Lock()
	m.counts[name]++
	m.mu.Unlock()
}

func (m *fakeMetrics) Set(name string, v float64, _ ...string) {
	m.mu.Lock()
	m.gauges[name] = v
	m.mu.Unlock()
}

func (m *fakeMetrics) count(name string) float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.counts[name]
}

func (m *fakeMetrics) gauge(name string) float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.gauges[name]
}

// logCapture keeps every record's message and attributes.
type logCapture struct {
	mu      sync.Mutex
	records []map[string]string
}

func (l *logCapture) Enabled(context.Context, slog.Level) bool { return true }
func (l *logCapture) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logCapture) WithGroup(string) slog.Handler            { return l }

func (l *logCapture) Handle(_ context.Context, r slog.Record) error {
	rec := map[string]string{"msg": r.Message}
	r.Attrs(func(a slog.Attr) bool {
		rec[a.Key] = a.Value.String()
		return true
	})
	l.mu.Lock()
	l.records = append(l.records, rec)
	l.mu.Unlock()
	return nil
}

// find returns the first record with msg and the given attribute values (key, value, …).
func (l *logCapture) find(msg string, attrs ...string) map[string]string {
	return l.first(func(r map[string]string) bool {
		match := r["msg"] == msg
		for i := 0; match && i+1 < len(attrs); i += 2 {
			match = r[attrs[i]] == attrs[i+1]
		}
		return match
	})
}

// first returns the first record match accepts.
func (l *logCapture) first(match func(map[string]string) bool) map[string]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range l.records {
		if match(r) {
			return r
		}
	}
	return nil
}

type harness struct {
	srv     *Server
	metrics *fakeMetrics
	logs    *logCapture
	tokens  *fakeTokens
	// clientTLS makes dial speak TLS (native mode without PROXY).
	clientTLS *tls.Config
}

// listenerModes runs a test against both listener modes.
func listenerModes(t *testing.T, run func(t *testing.T, start func(t *testing.T, cfg Config, deps Deps) *harness)) {
	t.Run("tls off", func(t *testing.T) {
		run(t, func(t *testing.T, cfg Config, deps Deps) *harness { return start(t, cfg, deps) })
	})
	t.Run("tls native", func(t *testing.T) {
		pki := newTestPKI(t)
		run(t, func(t *testing.T, cfg Config, deps Deps) *harness {
			cfg.TLS = pki.server
			h := start(t, cfg, deps)
			h.clientTLS = pki.client
			return h
		})
	})
}

// start runs a server on a loopback port; the deps not given get test fakes. setup runs
// between New and Start.
func start(t testing.TB, cfg Config, deps Deps, setup ...func(*Server)) *harness {
	t.Helper()
	return startLogging(t, nil, cfg, deps, setup...)
}

// startLogging is start with the server logging to log; nil captures the records in h.logs.
func startLogging(t testing.TB, log *slog.Logger, cfg Config, deps Deps, setup ...func(*Server)) *harness {
	t.Helper()
	h := &harness{metrics: newFakeMetrics(), logs: &logCapture{}}
	if log == nil {
		log = slog.New(h.logs)
	}
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	if deps.Auth == nil {
		h.tokens = &fakeTokens{}
		deps.Auth = h.tokens
	}
	if deps.Clock == nil {
		deps.Clock = fixedClock{testTime}
	}
	if deps.Metrics == nil {
		deps.Metrics = h.metrics
	}
	h.srv = New(cfg, deps, log)
	for _, f := range setup {
		f(h.srv)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if err := h.srv.Start(ctx); err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(t.Context()), 5*time.Second)
		defer cancel()
		if err := h.srv.Stop(ctx); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	return h
}

// eventually polls cond for up to 3 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	eventuallyWithin(t, 3*time.Second, what, cond)
}

// eventuallyWithin polls cond for up to wait.
func eventuallyWithin(t testing.TB, wait time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// rawClient speaks frames over a plain net.Conn, so tests control every byte.
type rawClient struct {
	t   *testing.T
	nc  net.Conn
	buf []byte
	seq uint32
}

func (h *harness) dial(t *testing.T) *rawClient {
	t.Helper()
	a := h.srv.Addr()
	nc, err := net.Dial(a.Network(), a.String())
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { _ = nc.Close() })
	if h.clientTLS != nil {
		tc := tls.Client(nc, h.clientTLS)
		if err := tc.HandshakeContext(t.Context()); err != nil {
			t.Fatalf("TLS handshake: %v", err)
		}
		nc = tc
	}
	return &rawClient{t: t, nc: nc}
}

func (c *rawClient) write(b []byte) {
	c.t.Helper()
	if _, err := c.nc.Write(b); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// send writes one request and returns its sequence id.
func (c *rawClient) send(cmd uint16, body any) uint32 {
	c.t.Helper()
	raw, err := json.Marshal(body)
	if err != nil {
		c.t.Fatalf("marshal: %v", err)
	}
	c.seq++
	f, err := frame.Append(nil, cmd, uint64(c.seq)*1000, c.seq, raw, 0)
	if err != nil {
		c.t.Fatalf("encode: %v", err)
	}
	c.write(f)
	return c.seq
}

// read returns the next frame, failing the test after 3 s.
func (c *rawClient) read() frame.Frame {
	c.t.Helper()
	f, err := c.next(3 * time.Second)
	if err != nil {
		c.t.Fatalf("read frame: %v", err)
	}
	return f
}

func (c *rawClient) next(wait time.Duration) (frame.Frame, error) {
	_ = c.nc.SetReadDeadline(time.Now().Add(wait))
	chunk := make([]byte, 64<<10)
	for {
		f, n, err := frame.Decode(c.buf)
		if err == nil {
			c.buf = c.buf[n:]
			return f, nil
		}
		if !errors.Is(err, frame.ErrIncomplete) {
			return frame.Frame{}, err
		}
		m, err := c.nc.Read(chunk)
		c.buf = append(c.buf, chunk[:m]...)
		if err != nil && m == 0 {
			return frame.Frame{}, err
		}
	}
}

// call sends a request and reads its one response.
func (c *rawClient) call(cmd uint16, body any) (frame.Frame, wire.Envelope) {
	c.t.Helper()
	seq := c.send(cmd, body)
	f := c.read()
	if f.SequenceID != seq {
		c.t.Fatalf("response sequence_id %d, want %d", f.SequenceID, seq)
	}
	return f, envelope(c.t, f)
}

func (c *rawClient) auth(user int64, device uint64) wire.AuthResponse {
	c.t.Helper()
	_, env := c.call(wire.CmdAuth, wire.AuthRequest{Token: token(user), DeviceID: device})
	var resp wire.AuthResponse
	decodeData(c.t, env, &resp)
	return resp
}

// expectClosed fails unless the server closes the connection within 3 s; frames sent
// before the close are skipped.
func (c *rawClient) expectClosed() {
	c.t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for {
		_, err := c.next(time.Until(deadline))
		if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || isReset(err) {
			return
		}
		if err != nil {
			c.t.Fatalf("want the server to close the connection, got %v", err)
		}
	}
}

// expectOpen fails if anything arrives or the connection closes within wait.
func (c *rawClient) expectOpen(wait time.Duration) {
	c.t.Helper()
	f, err := c.next(wait)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return
	}
	c.t.Fatalf("want an open, silent connection, got frame %+v err %v", f.Header, err)
}

func isReset(err error) bool {
	return err != nil && strings.Contains(err.Error(), "connection reset")
}

func envelope(t *testing.T, f frame.Frame) wire.Envelope {
	t.Helper()
	var env wire.Envelope
	if err := json.Unmarshal(f.Body, &env); err != nil {
		t.Fatalf("envelope of command %d: %v (%s)", f.Command, err, f.Body)
	}
	return env
}

func decodeData(t *testing.T, env wire.Envelope, out any) {
	t.Helper()
	if env.Code != wire.CodeOK {
		t.Fatalf("code %d %q, want 0", env.Code, env.Msg)
	}
	if err := json.Unmarshal(env.Data, out); err != nil {
		t.Fatalf("data: %v (%s)", err, env.Data)
	}
}
