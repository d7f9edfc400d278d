package e2e

// The metrics whose event needs a slow client, a busy worker pool or a system push service,
// each moved against the real binary (issue 20 item 2). TestMetricsCoverEverySeedName lists
// which test moves each metric.

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/redis"
	"github.com/imdhq/imd/clients/go/frame"
	"github.com/imdhq/imd/clients/go/wire"
)

// dialUnreading opens a connection with a tiny receive buffer, authenticates it with raw
// frames and then never reads again: the server's writes to it back up into imd's own
// outbound buffer.
func dialUnreading(t *testing.T, ctx context.Context, srv *Server, token string, device uint64) net.Conn {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		if err != nil {
			return err
		}
		return serr
	}}
	nc, err := d.DialContext(ctx, "tcp", srv.TCPAddr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	body, _ := json.Marshal(wire.AuthRequest{Token: token, DeviceID: device})
	auth, err := frame.Append(nil, wire.CmdAuth, 1, 1, body, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nc.Write(auth); err != nil {
		t.Fatal(err)
	}
	_ = nc.SetReadDeadline(time.Now().Add(15 * time.Second))
	var buf []byte
	chunk := make([]byte, 4096)
	for {
		n, err := nc.Read(chunk)
		if err != nil {
			t.Fatalf("no AUTH answer: %v", err)
		}
		buf = append(buf, chunk[:n]...)
		f, _, err := frame.Decode(buf)
		if err != nil {
			continue // incomplete
		}
		if f.Command != wire.ResponseCommand(wire.CmdAuth) {
			t.Fatalf("first frame is command %d, not the AUTH answer", f.Command)
		}
		return nc
	}
}

// TestMetricsOfOutboundDrops: a member that stops reading gets its pushes dropped once its
// outbound buffer is full, and every drop is counted.
func TestMetricsOfOutboundDrops(t *testing.T) {
	srv := Start(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := newChat(t, srv, ctx, 74, 2, 1)
	dialUnreading(t, ctx, srv, srv.Token(740_002), 7)

	// 32 KiB messages until the buffer (4 MiB plus the socket's) overflows; the limit only
	// guards against a server that never drops. Random text: pushes are compressed.
	random := make([]byte, 24<<10)
	_, _ = rand.Read(random)
	text := base64.StdEncoding.EncodeToString(random)
	before := srv.metricValue("outbound_drop_total")
	for i := 0; srv.metricValue("outbound_drop_total") <= before; i++ {
		if i == 100 {
			t.Fatalf("%d pushes of 32 KiB to a connection that reads nothing, and no drop", i*10)
		}
		for j := range 10 {
			if _, err := c.conns[0].Send(ctx, textMessage(c.topic, fmt.Sprintf("big-%d-%d", i, j), text)); err != nil {
				t.Fatalf("send %d: %v", i, err)
			}
		}
	}
}

// TestMetricsOfTaskPoolDepth: requests arriving while the one worker waits on MySQL queue up
// in the pool, and taskpool_depth shows them.
func TestMetricsOfTaskPoolDepth(t *testing.T) {
	srv := Start(t, Options{Env: map[string]string{"IMD_TASKPOOL_WORKERS": "1", "IMD_TASKPOOL_QUEUE": "4"}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := newChat(t, srv, ctx, 75, 2, 1)
	sendN(t, ctx, c.conns[0], c.topic, "before", 1)

	// A write lock on the month table holds every send's insert, and with it the worker.
	db := srv.TenantDB()
	lock, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if _, err := lock.ExecContext(ctx, "LOCK TABLES im_group_messages_"+Month(0)+" WRITE"); err != nil {
		t.Fatal(err)
	}
	unlock := sync.OnceFunc(func() {
		if _, err := lock.ExecContext(context.Background(), "UNLOCK TABLES"); err != nil {
			t.Error(err)
		}
	})
	var sends sync.WaitGroup
	defer sends.Wait()
	defer unlock() // runs first: the held sends finish, then they are waited for
	rises(t, srv, func() {
		for i := range 4 {
			sends.Go(func() { _, _ = c.conns[0].Send(ctx, textMessage(c.topic, fmt.Sprintf("held-%d", i), "held")) })
		}
	}, metric("taskpool_depth"))
	unlock()
	eventually(t, time.Minute, "the pool drains once MySQL answers", func() bool { return srv.metricValue("taskpool_depth") == 0 })
}

// pushService is a system-push webhook whose answer the test switches.
type pushService struct {
	mode    atomic.Value // "ok", "fail" or "hold"
	release chan struct{}
	posts   atomic.Int64
}

func (p *pushService) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.posts.Add(1)
	switch p.mode.Load() {
	case "fail":
		http.Error(w, "push provider down", http.StatusBadGateway)
	case "hold":
		select {
		case <-p.release:
		case <-r.Context().Done():
		}
		w.WriteHeader(http.StatusNoContent)
	default:
		w.WriteHeader(http.StatusNoContent)
	}
}

// TestMetricsOfSystemPush: a message for a member who is offline goes to the system push
// webhook; its posts are counted by outcome, and a full webhook queue drops (and the deliver
// worker counts the notification it could not hand over).
func TestMetricsOfSystemPush(t *testing.T) {
	svc := &pushService{release: make(chan struct{})}
	svc.mode.Store("ok")
	hook := httptest.NewServer(svc)
	t.Cleanup(hook.Close) // after the server stopped (cleanups run last first)
	srv := Start(t, Options{Env: map[string]string{
		"IMD_PUSH_WEBHOOK": hook.URL + "/push", "IMD_PUSH_QUEUE": "1", "IMD_PUSH_TIMEOUT": "1m",
	}})
	release := sync.OnceFunc(func() { close(svc.release) })
	t.Cleanup(release) // before the server stops, so its senders are not held
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := newChat(t, srv, ctx, 76, 2, 1) // the second member is offline

	rises(t, srv, func() { sendN(t, ctx, c.conns[0], c.topic, "ok", 1) },
		metric("deliver_notify_total", "status", "ok"), metric("push_notify_total", "status", "ok"))
	svc.mode.Store("fail")
	rises(t, srv, func() { sendN(t, ctx, c.conns[0], c.topic, "fail", 1) },
		metric("push_notify_total", "status", "failed"))

	// Every sender held by the webhook and the queue of one full: the next one is dropped.
	svc.mode.Store("hold")
	rises(t, srv, func() {
		for i := 0; srv.metricValue("push_notify_total", "status", "dropped") == 0; i++ {
			if i == 50 {
				t.Fatalf("%d notifications into a held webhook with a queue of 1, none dropped", i)
			}
			sendN(t, ctx, c.conns[0], c.topic, fmt.Sprintf("hold-%d", i), 1)
			time.Sleep(50 * time.Millisecond) // the deliver worker hands it over meanwhile
		}
	}, metric("push_notify_total", "status", "dropped"), metric("deliver_notify_total", "status", "failed"))
	release()
	if svc.posts.Load() == 0 {
		t.Fatal("the webhook saw no post")
	}
}

// TestMetricsOfRouteRepairBacklog: route repairs queued faster than the loop works them (one
// a second here) show as a backlog that drains.
func TestMetricsOfRouteRepairBacklog(t *testing.T) {
	srv := Start(t, Options{Env: map[string]string{
		"IMD_SHARD_ROUTE_REPAIR_INTERVAL": "1s", "IMD_SHARD_ROUTE_REPAIR_BATCH": "1",
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	queue := redis.NewRepairQueue(srv.Redis())
	backlog := metric("group_message_route_repair_backlog", "tenant", srv.Tenant)
	rises(t, srv, func() {
		for id := range 8 {
			if err := queue.Add(ctx, srv.Tenant, fmt.Sprintf("grp_%d", 990_001+id)); err != nil {
				t.Fatal(err)
			}
		}
	}, backlog, metric("group_message_route_repair_total"))
	eventually(t, time.Minute, "the repair backlog drains", func() bool { return srv.metricValue(backlog.name, backlog.labels...) == 0 })
}

// TestMetricsOfTLSHandshakeFailures: bytes that are no TLS ClientHello on a native-TLS
// listener fail the handshake, counted.
func TestMetricsOfTLSHandshakeFailures(t *testing.T) {
	RequireServices(t)
	certs := NginxCerts(t, NginxStateDir(t), NginxDomain())
	srv := Start(t, Options{Env: map[string]string{
		"IMD_TCP_TLS": "native", "IMD_TCP_CERT_FILE": filepath.Join(certs, "im.crt"), "IMD_TCP_KEY_FILE": filepath.Join(certs, "im.key"),
	}})
	rises(t, srv, func() {
		nc, err := net.DialTimeout("tcp", srv.TCPAddr, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		if _, err := nc.Write([]byte("GET / HTTP/1.0\r\n\r\n")); err != nil {
			t.Fatal(err)
		}
		_ = nc.SetReadDeadline(time.Now().Add(15 * time.Second))
		_, _ = io.Copy(io.Discard, nc) // until the server closes
	}, metric("tcp_tls_handshake_failures_total"))
}
