package runtime_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/memory"
	"github.com/imdhq/imd/core/domain/tenant"
	"github.com/imdhq/imd/core/runtime"
)

// wait bounds every "eventually" of these tests; nothing here is timed.
const wait = 10 * time.Second

// probe records the runs of the loops: a run announces itself on started and its end on
// ended, with the loop, the tenant (or the tenant set a node loop saw) and whether it ended
// because ctx did.
type probe struct {
	started chan string
	ended   chan string
}

func newProbe() *probe {
	return &probe{started: make(chan string, 100), ended: make(chan string, 100)}
}

func (p *probe) tenantLoop(name string) runtime.TenantLoop {
	return runtime.TenantLoop{Name: name, Run: func(ctx context.Context, t string) error {
		p.started <- name + "/" + t
		<-ctx.Done()
		p.ended <- name + "/" + t
		return ctx.Err()
	}}
}

// nodeLoop reports the tenant set it sees each time see is signalled.
func (p *probe) nodeLoop(name string, see <-chan struct{}) runtime.NodeLoop {
	return runtime.NodeLoop{Name: name, Run: func(ctx context.Context, tenants func() []string) error {
		p.started <- name
		for {
			select {
			case <-ctx.Done():
				p.ended <- name
				return nil
			case <-see:
				p.started <- name + ":" + strings.Join(tenants(), ",")
			}
		}
	}}
}

// expect receives len(want) events and compares them as a set.
func expect(t *testing.T, events <-chan string, want ...string) {
	t.Helper()
	var got []string
	for range want {
		select {
		case e := <-events:
			got = append(got, e)
		case <-time.After(wait):
			t.Fatalf("got %v, still waiting for the rest of %v", got, want)
		}
	}
	slices.Sort(got)
	want = slices.Clone(want)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
}

func TestEveryLoopRunsForConfiguredAndProvisionedTenants(t *testing.T) {
	ctx := context.Background()
	p := newProbe()
	see := make(chan struct{})
	var prepared []string
	rt := runtime.New(runtime.Config{}, runtime.Deps{
		Prepare: func(_ context.Context, ti tenant.Info) error { prepared = append(prepared, ti.Name); return nil },
		Tenant:  []runtime.TenantLoop{p.tenantLoop("shards"), p.tenantLoop("repair"), p.tenantLoop("deliver")},
		Node:    []runtime.NodeLoop{p.nodeLoop("migration", see)},
	})
	if err := rt.Add(ctx, tenant.Info{Name: "configured"}); err != nil {
		t.Fatal(err)
	}
	select {
	case e := <-p.started:
		t.Fatalf("%s ran before Start", e)
	default:
	}
	if err := rt.Start(ctx); err != nil {
		t.Fatal(err)
	}
	expect(t, p.started, "shards/configured", "repair/configured", "deliver/configured", "migration")

	// Provisioned at run time: its loops start at once, and the node loops see it.
	if err := rt.Add(ctx, tenant.Info{Name: "late"}); err != nil {
		t.Fatal(err)
	}
	expect(t, p.started, "shards/late", "repair/late", "deliver/late")
	see <- struct{}{}
	expect(t, p.started, "migration:configured,late")

	// A retried provisioning prepares again and starts nothing twice.
	if err := rt.Add(ctx, tenant.Info{Name: "late"}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"configured", "late", "late"}; !slices.Equal(prepared, want) {
		t.Errorf("prepared %v, want %v", prepared, want)
	}

	if err := rt.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	// Stop returned: every loop has ended, none is left to report later.
	expect(t, p.ended, "shards/configured", "repair/configured", "deliver/configured",
		"shards/late", "repair/late", "deliver/late", "migration")
	select {
	case e := <-p.started:
		t.Fatalf("%s started again after Stop", e)
	default:
	}
	if err := rt.Add(ctx, tenant.Info{Name: "after"}); !errors.Is(err, runtime.ErrStopped) {
		t.Errorf("Add after Stop = %v, want ErrStopped", err)
	}
}

func TestAPrepareFailureRefusesTheTenant(t *testing.T) {
	ctx := context.Background()
	p := newProbe()
	boom := errors.New("no database")
	rt := runtime.New(runtime.Config{}, runtime.Deps{
		Prepare: func(context.Context, tenant.Info) error { return boom },
		Tenant:  []runtime.TenantLoop{p.tenantLoop("shards")},
	})
	if err := rt.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := rt.Add(ctx, tenant.Info{Name: "t"}); !errors.Is(err, boom) {
		t.Fatalf("Add = %v, want %v", err, boom)
	}
	if got := rt.Tenants(); len(got) != 0 {
		t.Errorf("tenants %v, want none", got)
	}
	if err := rt.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if len(p.started) != 0 {
		t.Errorf("a loop ran for a refused tenant: %s", <-p.started)
	}
}

// syncBuffer is a log sink the loops' goroutines may write to while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestAFailingLoopIsReportedAndRestartedWithBackoff(t *testing.T) {
	for _, tc := range []struct {
		name string
		fail func() error
		want string
	}{
		{"error", func() error { return errors.New("redis gone") }, "redis gone"},
		{"early return", func() error { return nil }, "returned before stop"},
		{"panic", func() error { panic("nil map") }, "panic: nil map"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			var logs syncBuffer
			metrics := memory.NewMetrics()
			// The backoff waits on timers the test fires: the requested delays are recorded.
			delays := make(chan time.Duration, 10)
			fire := make(chan time.Time)
			runs := make(chan int, 10)
			var n int
			rt := runtime.New(runtime.Config{Backoff: time.Second, MaxBackoff: time.Hour}, runtime.Deps{
				Tenant: []runtime.TenantLoop{{Name: "repair", Run: func(ctx context.Context, _ string) error {
					n++
					runs <- n
					if n <= 2 {
						return tc.fail()
					}
					<-ctx.Done()
					return nil
				}}},
				Metrics: metrics,
				Log:     slog.New(slog.NewTextHandler(&logs, nil)),
				After:   func(d time.Duration) <-chan time.Time { delays <- d; return fire },
				Now:     func() time.Time { return time.Unix(0, 0) }, // no run lasts long enough to reset
			})
			if err := rt.Add(ctx, tenant.Info{Name: "acme"}); err != nil {
				t.Fatal(err)
			}
			if err := rt.Start(ctx); err != nil {
				t.Fatal(err)
			}
			for attempt, backoff := range []time.Duration{time.Second, 2 * time.Second} {
				if got := receive(t, runs); got != attempt+1 {
					t.Fatalf("run %d, want %d", got, attempt+1)
				}
				if got := receive(t, delays); got != backoff {
					t.Errorf("backoff %v, want %v", got, backoff)
				}
				if got := metrics.Count("tenant_loop_restarts_total", "repair", "acme"); got != float64(attempt+1) {
					t.Errorf("restarts counted %v, want %d", got, attempt+1)
				}
				fire <- time.Time{}
			}
			if got := receive(t, runs); got != 3 {
				t.Fatalf("run %d, want 3", got)
			}
			if err := rt.Stop(ctx); err != nil {
				t.Fatal(err)
			}
			out := logs.String()
			if !strings.Contains(out, "tenant loop failed") || !strings.Contains(out, "loop=repair") ||
				!strings.Contains(out, "tenant=acme") || !strings.Contains(out, tc.want) {
				t.Errorf("log does not report the failure (%q):\n%s", tc.want, out)
			}
		})
	}
}

func TestStopEndsABackoffWait(t *testing.T) {
	ctx := context.Background()
	waiting := make(chan struct{})
	rt := runtime.New(runtime.Config{}, runtime.Deps{
		Node: []runtime.NodeLoop{{Name: "retention", Run: func(context.Context, func() []string) error {
			return errors.New("catalog unreadable")
		}}},
		After: func(time.Duration) <-chan time.Time { close(waiting); return nil }, // never fires
	})
	if err := rt.Start(ctx); err != nil {
		t.Fatal(err)
	}
	<-waiting
	if err := rt.Stop(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestStopGivesUpAtItsDeadline(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	rt := runtime.New(runtime.Config{}, runtime.Deps{
		Node: []runtime.NodeLoop{{Name: "stuck", Run: func(context.Context, func() []string) error {
			<-release // ignores its ctx
			return nil
		}}},
	})
	if err := rt.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := rt.Stop(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Stop = %v, want the deadline's error", err)
	}
}

func receive[T any](t *testing.T, c <-chan T) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(wait):
		t.Fatal("nothing arrived")
		panic("unreachable")
	}
}
