package server

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/protocol/tlstest"
	"github.com/imdhq/imd/core/domain/delivery"
)

// opensslRun is the verdict of one run of testdata/pipeline_client.py.
type opensslRun struct {
	Answered int      `json:"answered"`
	Pushes   int      `json:"pushes"`
	Written  int      `json:"written"`
	Errors   []string `json:"errors"`
}

// runOpenSSLClient runs the Python client (Python's ssl module is OpenSSL) against a native
// server at addr, args over the defaults. python3 is on every Debian machine.
func runOpenSSLClient(t *testing.T, caFile, addr string, args map[string]any) opensslRun {
	t.Helper()
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	cfg := map[string]any{"host": ap.Addr().String(), "port": ap.Port(), "ca": caFile, "sni": "im.test",
		"timeout": 60, "tokens": []string{token(1)}}
	for k, v := range args {
		cfg[k] = v
	}
	raw, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(t.Context(), "python3", "testdata/pipeline_client.py", string(raw)).Output()
	var run opensslRun
	if jerr := json.Unmarshal(out, &run); jerr != nil {
		t.Fatalf("python3 client: %v (exit: %v), stdout %q", jerr, err, out)
	}
	return run
}

// An OpenSSL client that pipelines (issue 34): 8 connections each write 150 SEND_MESSAGEs
// without waiting, one TLS record per frame and now and then several frames in one record,
// bodies of 0–700 bytes across the compression threshold (half of those over it compressed),
// while every connection is pushed MESSAGEs that race its answers and it PUSH_ACKs them. Every
// request gets its own answer, every push arrives, no connection breaks, on TLS 1.2 and 1.3,
// three rounds each.
func TestTLSOpenSSLClientPipelines(t *testing.T) {
	const (
		connections = 8
		sends       = 150
		pushes      = 40
		rounds      = 3
	)
	for _, version := range []string{"1.3", "1.2"} {
		t.Run("TLS "+version, func(t *testing.T) {
			st := newStack(t)
			pki := newTestPKI(t)
			caFile, _ := tlstest.WriteFiles(t, pki.server)
			h := start(t, Config{TLS: pki.server, ProxyProtocol: true, CompressMin: 512, Multicore: true,
				IdleTimeout: time.Hour, RequestTimeout: time.Minute, Queue: connections * sends, PushAckTimeout: time.Minute}, st.deps)
			long := strings.Repeat("pushed over native TLS ", 30) // compressed
			for round := range rounds {
				// A connection of the round before that the server has not seen close yet would
				// take pushes meant for this round's connection of the same device.
				eventuallyWithin(t, 30*time.Second, "the round before's connections to close", func() bool {
					return h.metrics.gauge("tcp_connections") == 0
				})
				var pushing sync.WaitGroup
				for i := range connections {
					pushing.Go(func() { // each connection's device gets pushes as soon as it is online
						device := uint64(1000 + i)
						deadline := time.Now().Add(time.Minute)
						for k := 0; k < pushes && time.Now().Before(deadline); {
							m := testMessage(int64(k+1), long)
							m.Topic = fmt.Sprintf("grp_%d%d", round, i)
							if h.srv.PushDevice(t.Context(), "default", 1, device, delivery.Push{Kind: delivery.KindMessage, Message: m}) == 1 {
								k++
							} else {
								time.Sleep(time.Millisecond)
							}
						}
					})
				}
				run := runOpenSSLClient(t, caFile, h.srv.Addr().String(), map[string]any{
					"mode": "pipeline", "tls": version, "connections": connections, "sends": sends, "seed": round,
					"to_user": 2, "max_body": 700, "compress_min": 512, "coalesce": 0.1, "pushes": pushes,
				})
				pushing.Wait()
				if len(run.Errors) > 0 || run.Answered != connections*sends || run.Pushes != connections*pushes {
					t.Fatalf("round %d: %d of %d answered, %d of %d pushes, errors %v", round,
						run.Answered, connections*sends, run.Pushes, connections*pushes, run.Errors)
				}
			}
			if rec := h.logs.first(func(r map[string]string) bool { return strings.Contains(r["err"], "tls") }); rec != nil {
				t.Errorf("TLS error logged: %v", rec)
			}
		})
	}
}

// The first frame an OpenSSL client writes right after its handshake, AUTH or HEARTBEAT, is
// answered on every one of 40 fresh connections, five rounds, TLS 1.2 and 1.3 (issue 34). A
// lost frame shows as a connection that waits out its generous timeout, not as a slow answer.
func TestTLSOpenSSLFirstFrameAnswered(t *testing.T) {
	for _, version := range []string{"1.3", "1.2"} {
		t.Run("TLS "+version, func(t *testing.T) {
			st := newStack(t)
			pki := newTestPKI(t)
			caFile, _ := tlstest.WriteFiles(t, pki.server)
			h := start(t, Config{TLS: pki.server, ProxyProtocol: true, Multicore: true, IdleTimeout: time.Hour}, st.deps)
			for round := range 5 {
				run := runOpenSSLClient(t, caFile, h.srv.Addr().String(), map[string]any{
					"mode": "first", "tls": version, "connections": 40, "timeout": 30,
				})
				if len(run.Errors) > 0 {
					t.Fatalf("round %d: %v", round, run.Errors)
				}
			}
		})
	}
}
