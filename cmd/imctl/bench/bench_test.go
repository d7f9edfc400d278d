package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/imdhq/imd/clients/go/client"
	"github.com/imdhq/imd/clients/go/wire"
	"github.com/imdhq/imd/cmd/imctl/adminapi"
	"github.com/imdhq/imd/cmd/imctl/bench/hist"
	"github.com/imdhq/imd/cmd/imctl/bench/report"
)

func fakeConfig(f *fakeIMD, workload string) Config {
	return Config{
		Workload: workload, Users: 4, GroupSize: 2, Members: 4, Rate: 200, Conns: 6, Heartbeat: 20 * time.Millisecond,
		Groups: 2, Publishers: 2,
		Messages: 30, PageSize: 20,
		Duration: 300 * time.Millisecond, Warmup: 100 * time.Millisecond, Parallel: 4, SyncMax: 1_000_000,
		Dial:       client.Options{Addr: f.ln.Addr().String()},
		Admin:      adminapi.New(f.admin.URL, "key", "t", nil),
		Status:     io.Discard,
		drainStall: 300 * time.Millisecond,
	}
}

func TestRunWorkloads(t *testing.T) {
	tests := []struct {
		workload string
		check    func(t *testing.T, rep report.Report)
	}{
		{W1, func(t *testing.T, rep report.Report) {
			wantLatencies(t, rep, "send_ack", "send_to_delivery", "connect_auth")
			if rep.Verification.Sync.Reads != 2 {
				t.Errorf("read back %d topics, want the 2 pairs", rep.Verification.Sync.Reads)
			}
		}},
		{W2, func(t *testing.T, rep report.Report) {
			wantLatencies(t, rep, "send_ack", "send_to_delivery", "connect_auth")
		}},
		{W3, func(t *testing.T, rep report.Report) {
			// 200 msg/s for 0.3 s from one sender, each to 3 members.
			if rep.Sent < 40 || rep.Sent > 70 {
				t.Errorf("paced sender sent %d in the window, want about 60", rep.Sent)
			}
			if rep.Verification.Expected != 3*rep.Verification.Acked {
				t.Errorf("expected %d deliveries for %d ACKs", rep.Verification.Expected, rep.Verification.Acked)
			}
		}},
		{W4, func(t *testing.T, rep report.Report) {
			wantLatencies(t, rep, "heartbeat", "connect_auth")
			if rep.Ops == 0 || rep.Connections.Established != 6 || rep.Verification.Acked != 0 {
				t.Errorf("ops %d, connections %+v", rep.Ops, rep.Connections)
			}
		}},
		{T1, func(t *testing.T, rep report.Report) {
			// 2 groups of 3, all publishing: every message reaches the 2 other members.
			if rep.Connections.Established != 6 || rep.Verification.Expected != 2*rep.Verification.Acked || rep.Verification.Sync.Reads != 2 {
				t.Errorf("connections %+v verification %+v", rep.Connections, rep.Verification)
			}
			if rep.Params["groups"] != "2" || rep.Params["group_size"] != "3" {
				t.Errorf("params %v", rep.Params)
			}
		}},
		{T2, func(t *testing.T, rep report.Report) {
			// One group of 5, 2 publishing: every message reaches the 4 other members.
			if rep.Connections.Established != 5 || rep.Verification.Expected != 4*rep.Verification.Acked || rep.Verification.Sync.Reads != 1 {
				t.Errorf("connections %+v verification %+v", rep.Connections, rep.Verification)
			}
			if rep.Params["members"] != "5" || rep.Params["publishers"] != "2" {
				t.Errorf("params %v", rep.Params)
			}
		}},
		{W5, func(t *testing.T, rep report.Report) {
			wantLatencies(t, rep, "get_history", "connect_auth")
			next := time.Now().AddDate(0, 1, 0).Format("200601")
			after := time.Now().AddDate(0, 2, 0).Format("200601")
			if rep.Params["months"] != next+","+after {
				t.Errorf("months %q, want the fake's active month %s and the next", rep.Params["months"], next)
			}
			// Every complete GET_HISTORY pass is checked, plus the final sync.
			if rep.Verification.Acked != 60 || rep.Verification.Sync.Reads < 2 || rep.Verification.Expected != 4*60 {
				t.Errorf("verification %+v", rep.Verification)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.workload, func(t *testing.T) {
			f := startFake(t, faultNone)
			cfg := fakeConfig(f, tt.workload)
			switch tt.workload {
			case T1:
				cfg.GroupSize = 3
			case T2:
				cfg.Members = 5
			}
			rep, err := Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if !rep.Pass {
				t.Fatalf("run failed: %q", rep.Problems)
			}
			if rep.Workload != tt.workload || rep.Description == "" || rep.Machine.Cores == 0 || len(rep.Processes) != 1 {
				t.Errorf("report header %+v", rep)
			}
			if tt.workload != W4 && tt.workload != W5 && (rep.Acked == 0 || rep.Delivered == 0 || rep.AckedPerSec == 0) {
				t.Errorf("acked %d delivered %d", rep.Acked, rep.Delivered)
			}
			if cost, ok := rep.Cost("imctl"); tt.workload != W4 && tt.workload != W5 && (!ok || len(rep.Window) != 1) {
				t.Errorf("window processes %+v, cost %+v", rep.Window, cost)
			}
			tt.check(t, rep)
		})
	}
}

// TestT2PublishersOnly: in t2 only the first --publishers members send; the others receive.
func TestT2PublishersOnly(t *testing.T) {
	f := startFake(t, faultNone)
	cfg := fakeConfig(f, T2)
	cfg.Members, cfg.Publishers = 6, 1
	rep, err := Run(context.Background(), cfg)
	if err != nil || !rep.Pass {
		t.Fatalf("run: %v %q", err, rep.Problems)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.senders) != 1 {
		t.Fatalf("%d users sent, want the one publisher", len(f.senders))
	}
}

// TestServerProfileCoversTheWindow: the server's profile is asked for once, when the
// measured window opens, for the window's length.
func TestServerProfileCoversTheWindow(t *testing.T) {
	f := startFake(t, faultNone)
	cfg := fakeConfig(f, W1)
	var calls []time.Duration
	var at time.Time
	start := time.Now()
	cfg.ServerProfile = func(_ context.Context, window time.Duration) error {
		calls = append(calls, window)
		at = time.Now()
		return errors.New("no profiler here")
	}
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != 1 || calls[0] != cfg.Duration || at.Sub(start) < cfg.Warmup {
		t.Fatalf("profile asked %v at %v after the start", calls, at.Sub(start))
	}
	if rep.Errors["server_profile"] != 1 {
		t.Fatalf("errors %v: a failed profile is counted", rep.Errors)
	}
}

func wantLatencies(t *testing.T, rep report.Report, names ...string) {
	t.Helper()
	var got []string
	for _, l := range rep.Latencies {
		got = append(got, l.Name)
	}
	if !slices.Equal(got, names) {
		t.Errorf("latencies %q, want %q", got, names)
	}
}

func TestRunDetectsFaults(t *testing.T) {
	tests := []struct {
		fault string
		want  string
	}{
		{faultDuplicate, "duplicate deliveries"},
		{faultDrop, "ACKed deliveries missing"},
		{faultReorder, "deliveries out of seq order"},
		{faultLose, "1 ACKed messages not readable back"},
	}
	for _, tt := range tests {
		t.Run(tt.fault, func(t *testing.T) {
			f := startFake(t, tt.fault)
			rep, err := Run(context.Background(), fakeConfig(f, W3))
			if err != nil {
				t.Fatal(err)
			}
			if rep.Pass || !strings.Contains(strings.Join(rep.Problems, ";"), tt.want) {
				t.Fatalf("pass %v problems %q, want %q", rep.Pass, rep.Problems, tt.want)
			}
		})
	}
}

func TestRunSpreadsSourceIPs(t *testing.T) {
	f := startFake(t, faultNone)
	cfg := fakeConfig(f, W4)
	cfg.SourceIPs = []string{"127.0.0.2", "127.0.0.3"}
	rep, err := Run(context.Background(), cfg)
	if err != nil || !rep.Pass {
		t.Fatalf("run: %v %q", err, rep.Problems)
	}
	if got := f.sourceIPs(); !slices.Equal(got, cfg.SourceIPs) {
		t.Fatalf("connections came from %q", got)
	}
	if rep.Params["source_ips"] != "127.0.0.2 127.0.0.3" {
		t.Fatalf("params %v", rep.Params)
	}
}

// TestRunSpreadsNodes: --tcp a,b dials connection i to node i mod 2; the second "node" is a
// relay to the same fake, counting what it relays.
func TestRunSpreadsNodes(t *testing.T) {
	f := startFake(t, faultNone)
	relay, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { relay.Close() })
	relayed := make(chan struct{}, 64)
	go func() {
		for {
			in, err := relay.Accept()
			if err != nil {
				return
			}
			relayed <- struct{}{}
			out, err := net.Dial("tcp", f.ln.Addr().String())
			if err != nil {
				in.Close()
				continue
			}
			go func() { _, _ = io.Copy(out, in); out.Close() }()
			go func() { _, _ = io.Copy(in, out); in.Close() }()
		}
	}()
	cfg := fakeConfig(f, W4)
	cfg.Nodes = []string{f.ln.Addr().String(), relay.Addr().String()}
	rep, err := Run(context.Background(), cfg)
	if err != nil || !rep.Pass {
		t.Fatalf("run: %v %q", err, rep.Problems)
	}
	if got := len(relayed); got != cfg.Conns/2 {
		t.Fatalf("the second node got %d of %d connections", got, cfg.Conns)
	}
	if rep.Params["nodes"] != "2" {
		t.Fatalf("params %v", rep.Params)
	}
}

func TestRunCountsLostConnections(t *testing.T) {
	f := startFake(t, faultNone)
	cfg := fakeConfig(f, W4)
	cfg.Duration = time.Second
	closed := make(chan int, 1)
	go func() {
		// Cut one connection per user once every connection is up: a fixed delay cut fewer
		// than the run later opened on a loaded box.
		for {
			f.mu.Lock()
			open := 0
			for _, cs := range f.conns {
				open += len(cs)
			}
			if open == cfg.Conns {
				for _, cs := range f.conns {
					// FIN, not Close: closing with a heartbeat unread would reset the connection,
					// which the client rightly counts as a network error, not the end of the
					// stream this test cuts. The fake reads on until the client closes its side.
					cs[0].nc.(*net.TCPConn).CloseWrite()
				}
				closed <- len(f.conns) // one per user
				f.mu.Unlock()
				return
			}
			f.mu.Unlock()
			time.Sleep(5 * time.Millisecond)
		}
	}()
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	n := <-closed
	if rep.Pass || rep.Connections.Lost != n || rep.Verification.Offline != n || rep.Errors["conn_lost:eof"] != int64(n) {
		t.Fatalf("pass %v connections %+v errors %v", rep.Pass, rep.Connections, rep.Errors)
	}
}

func TestRunInterrupted(t *testing.T) {
	f := startFake(t, faultNone)
	cfg := fakeConfig(f, W1)
	cfg.Duration = time.Minute
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(500*time.Millisecond, cancel)
	start := time.Now()
	rep, err := Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("an interrupted run took %v", took)
	}
	if rep.Pass || !rep.Interrupted || rep.Verification.Sync.Reads != 0 {
		t.Fatalf("pass %v interrupted %v reads %d", rep.Pass, rep.Interrupted, rep.Verification.Sync.Reads)
	}
}

func TestRunSetupFailures(t *testing.T) {
	f := startFake(t, faultNone)
	tests := []struct {
		name   string
		change func(*Config)
		want   string
	}{
		{"invalid config", func(c *Config) { c.Users = 3 }, "--users must be even"},
		{"admin API down", func(c *Config) { c.Admin = adminapi.New("http://127.0.0.1:1", "k", "t", nil) }, "create users"},
		{"TCP listener down", func(c *Config) { c.Dial.Addr = "127.0.0.1:1" }, "no connection could be established"},
		{"cancelled", nil, "context canceled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := fakeConfig(f, W1)
			ctx := context.Background()
			if tt.change != nil {
				tt.change(&cfg)
			} else {
				var cancel context.CancelFunc
				ctx, cancel = context.WithCancel(ctx)
				cancel()
			}
			if _, err := Run(ctx, cfg); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	ok := Config{
		Workload: W1, Users: 10, GroupSize: 5, Members: 10, Rate: 1, Conns: 10, Heartbeat: time.Second, Messages: 1, PageSize: 50,
		Groups: 2, Publishers: 5,
		Duration: time.Second, Parallel: 1, Admin: adminapi.New("http://x", "k", "t", nil),
	}
	tests := []struct {
		name   string
		change func(*Config)
		want   string
	}{
		{"valid", func(*Config) {}, ""},
		{"every workload valid", nil, ""},
		{"zero duration", func(c *Config) { c.Duration = 0 }, "--duration"},
		{"endless duration", func(c *Config) { c.Duration = 25 * time.Hour }, "--duration"},
		{"negative warmup", func(c *Config) { c.Warmup = -1 }, "--warmup"},
		{"no parallelism", func(c *Config) { c.Parallel = 0 }, "--parallel"},
		{"negative sync-max", func(c *Config) { c.SyncMax = -1 }, "--sync-max"},
		{"bad source IP", func(c *Config) { c.SourceIPs = []string{"127.0.0.2", "localhost"} }, `"localhost" is not an IP`},
		{"odd w1 users", func(c *Config) { c.Users = 9 }, "w1: --users must be even"},
		{"w2 users not a multiple", func(c *Config) { c.Workload = W2; c.Users = 12 }, "multiple of --group-size"},
		{"w2 group of one", func(c *Config) { c.Workload = W2; c.GroupSize = 1 }, "multiple of --group-size"},
		{"t1 no groups", func(c *Config) { c.Workload = T1; c.Groups = 0 }, "t1: --groups"},
		{"t1 group of one", func(c *Config) { c.Workload = T1; c.GroupSize = 1 }, "t1: --groups"},
		{"t2 more publishers than members", func(c *Config) { c.Workload = T2; c.Publishers = 11 }, "t2: --members"},
		{"t2 no publishers", func(c *Config) { c.Workload = T2; c.Publishers = 0 }, "t2: --members"},
		{"w3 one member", func(c *Config) { c.Workload = W3; c.Members = 1 }, "--members"},
		{"w3 no rate", func(c *Config) { c.Workload = W3; c.Rate = 0 }, "--rate"},
		{"w4 no conns", func(c *Config) { c.Workload = W4; c.Conns = 0 }, "--conns"},
		{"w4 no heartbeat", func(c *Config) { c.Workload = W4; c.Heartbeat = 0 }, "--heartbeat"},
		{"w5 no messages", func(c *Config) { c.Workload = W5; c.Messages = 0 }, "--messages"},
		{"w5 page too big", func(c *Config) { c.Workload = W5; c.PageSize = 201 }, "--page-size"},
		{"unknown workload", func(c *Config) { c.Workload = "w9" }, `unknown workload "w9"`},
		{"no admin client", func(c *Config) { c.Admin = nil }, "admin"},
		{"several problems at once", func(c *Config) { c.Duration = 0; c.Users = 3 }, "--duration must be in (0, 24h0m0s]\nw1: --users"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.change == nil {
				for _, w := range []string{W1, W2, W3, W4, W5, T1, T2} {
					c := ok
					c.Workload = w
					if err := c.Validate(); err != nil {
						t.Errorf("%s: %v", w, err)
					}
				}
				return
			}
			c := ok
			tt.change(&c)
			err := c.Validate()
			if (tt.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestSplitList(t *testing.T) {
	tests := map[string][]string{
		"":                          nil,
		"127.0.0.2":                 {"127.0.0.2"},
		" 127.0.0.2, 127.0.0.3 ,, ": {"127.0.0.2", "127.0.0.3"},
	}
	for in, want := range tests {
		if got := SplitList(in); !slices.Equal(got, want) {
			t.Errorf("SplitList(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestClientMsgIDCarriesSendTime(t *testing.T) {
	id := clientMsgID(42, 1_234_567_890)
	if id != "b42.1234567890" || len(id) > 64 {
		t.Fatalf("id %q", id)
	}
	tests := []struct {
		id   string
		want int64
		ok   bool
	}{
		{id, 1_234_567_890, true},
		{"b1.x", 0, false},
		{"HZI4QIU7F74RKUEB", 0, false},
		{"c1.5", 0, false},
	}
	for _, tt := range tests {
		if got, ok := sentAt(tt.id); got != tt.want || ok != tt.ok {
			t.Errorf("sentAt(%q) = %d, %v", tt.id, got, ok)
		}
	}
	if got := string(content(7, 0)); got != `{"text":"bench #7"}` {
		t.Errorf("content %s", got)
	}
	if got := content(7, tinodeText); len(got) != tinodeText || !json.Valid(got) || !strings.HasPrefix(string(got), `{"text":"bench #7 ...`) {
		t.Errorf("padded content %s (%d bytes)", got, len(got))
	}
}

func TestErrorKeyAndRetriable(t *testing.T) {
	tests := []struct {
		err       error
		key       string
		retriable bool
	}{
		{nil, "none", false},
		{fmt.Errorf("send: %w", &client.CodeError{Code: wire.CodeBusy}), "50301", true},
		{&client.CodeError{Code: wire.CodeRateLimited}, "42901", true},
		{&client.CodeError{Code: wire.CodeForbidden}, "40301", false},
		{fmt.Errorf("client: command 4: %w", context.DeadlineExceeded), "timeout", true},
		{context.Canceled, "canceled", false},
		{client.ErrClosed, "closed", false},
		{fmt.Errorf("%w: bad", client.ErrProtocol), "protocol", false},
		{fmt.Errorf("client: read: %w", io.EOF), "eof", false},
		{io.ErrUnexpectedEOF, "eof", false},
		{&net.OpError{Op: "dial", Err: os.ErrDeadlineExceeded}, "network", false},
		{errors.New("boom"), "other", false},
	}
	for _, tt := range tests {
		if got := errorKey(tt.err); got != tt.key {
			t.Errorf("errorKey(%v) = %q, want %q", tt.err, got, tt.key)
		}
		if tt.err != nil && retriable(tt.err) != tt.retriable {
			t.Errorf("retriable(%v) = %v", tt.err, !tt.retriable)
		}
	}
}

func TestStatusLine(t *testing.T) {
	var h hist.Histogram
	prev := sample{at: time.Unix(100, 0), latency: h.Snapshot()}
	for range 100 {
		h.Record(2 * time.Millisecond)
	}
	cur := sample{at: time.Unix(102, 0), acked: 20000, delivered: 40000, ops: 10, errors: 3, pending: 1234, latency: h.Snapshot()}
	tests := []struct {
		name, phase, op string
		cur             sample
		want            string
	}{
		{"sending", "measuring", "", cur, "measuring · 10,000 ACK/s · 20,000 deliveries/s · p99 2.00 ms · pending 1,234 · errors 3"},
		{"other requests", "warm-up", "heartbeat", sample{at: cur.at, ops: 10, latency: cur.latency},
			"warm-up · 5 heartbeat/s · p99 2.00 ms · pending 0 · errors 0"},
		{"both", "measuring", "get_history", cur, "measuring · 10,000 ACK/s · 20,000 deliveries/s · 5 get_history/s · p99 2.00 ms · pending 1,234 · errors 3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := statusLine(tt.phase, tt.op, prev, tt.cur); got != tt.want {
				t.Fatalf("status\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}
