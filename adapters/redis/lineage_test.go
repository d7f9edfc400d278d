package redis

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/imdhq/imd/ports/contract"
)

// restartableRedis is a redis-server of one test (no persistence), which the test may restart
// or turn into a promoted replica without disturbing the shared one.
type restartableRedis struct {
	port string
	dir  string
	cmd  *exec.Cmd
}

func startRestartableRedis(t *testing.T) *restartableRedis {
	t.Helper()
	testClient(t) // skips, or fails under IMD_REQUIRE_SERVICES, like every Redis test
	r := &restartableRedis{port: freePort(t), dir: t.TempDir()}
	r.start(t)
	t.Cleanup(r.stop)
	return r
}

func (r *restartableRedis) addr() string { return "127.0.0.1:" + r.port }

func (r *restartableRedis) start(t *testing.T) {
	t.Helper()
	r.cmd = exec.Command("redis-server", "--bind", "127.0.0.1", "--port", r.port, "--save", "", "--appendonly", "no", "--dir", r.dir)
	if err := r.cmd.Start(); err != nil {
		t.Fatalf("start redis-server: %v", err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if out, err := exec.Command("redis-cli", "-p", r.port, "PING").Output(); err == nil && strings.TrimSpace(string(out)) == "PONG" {
			return
		} else if time.Now().After(deadline) {
			t.Fatalf("redis-server on %s does not answer: %v", r.port, err)
		}
	}
}

func (r *restartableRedis) stop() {
	_ = r.cmd.Process.Kill()
	_ = r.cmd.Wait()
}

func (r *restartableRedis) cli(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("redis-cli", append([]string{"-p", r.port}, args...)...).CombinedOutput(); err != nil || !strings.HasPrefix(string(out), "OK") {
		t.Fatalf("redis-cli %v: %s %v", args, out, err)
	}
}

// TestRedisLineageContract runs the contract on a private Redis, replaced in both ways that
// lose writes: the master restarted (kill -9, started again empty) and a replica promoted
// (REPLICAOF NO ONE on a replica of a master that is gone).
func TestRedisLineageContract(t *testing.T) {
	replacements := []struct {
		name    string
		replace func(t *testing.T, r *restartableRedis)
	}{
		{"master restarted", func(t *testing.T, r *restartableRedis) { r.stop(); r.start(t) }},
		{"replica promoted", func(t *testing.T, r *restartableRedis) {
			r.cli(t, "REPLICAOF", "127.0.0.1", "1") // a master that never answers: the data stay
			r.cli(t, "REPLICAOF", "NO", "ONE")
		}},
	}
	for _, rp := range replacements {
		t.Run(rp.name, func(t *testing.T) {
			contract.RedisLineage(t, func(t *testing.T) contract.LineageFixture {
				r := startRestartableRedis(t)
				c, err := Open(context.Background(), r.addr())
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(c.Close)
				return contract.LineageFixture{Lineage: answering{NewLineage(c)}, Replace: func(t *testing.T) { rp.replace(t, r) }}
			})
		})
	}
}

// answering retries Lineage while the client reconnects to a restarted server.
type answering struct{ l *Lineage }

func (a answering) Lineage(ctx context.Context) (s string, err error) {
	for range 50 {
		if s, err = a.l.Lineage(ctx); err == nil {
			return s, nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return "", err
}

// TestRedisLineageOfACluster names every master of the shared cluster (the single Redis is one
// master), and stays the same from call to call.
func TestRedisLineageOfACluster(t *testing.T) {
	cases := []struct {
		backend *backend
		masters int
	}{
		{single, 1},
		{cluster, 3},
	}
	for _, c := range cases {
		t.Run(c.backend.name, func(t *testing.T) {
			l := NewLineage(c.backend.client(t))
			first, err := l.Lineage(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if n := len(strings.Split(first, ",")); n != c.masters {
				t.Fatalf("lineage %q names %d masters, want %d", first, n, c.masters)
			}
			if again, err := l.Lineage(context.Background()); err != nil || again != first {
				t.Fatalf("lineage went from %q to %q, %v", first, again, err)
			}
		})
	}
}
