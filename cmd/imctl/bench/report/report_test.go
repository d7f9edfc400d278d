package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/imdhq/imd/cmd/imctl/bench/hist"
	"github.com/imdhq/imd/cmd/imctl/bench/procstat"
	"github.com/imdhq/imd/cmd/imctl/bench/serverwork"
	"github.com/imdhq/imd/cmd/imctl/bench/verify"
)

func sample() Report {
	return Report{
		Workload:    "w1",
		Description: "p2p: 4 users in 2 friend pairs, closed loop",
		Params:      map[string]string{"users": "4", "source_ips": "127.0.0.1"},
		Started:     time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC),
		WarmupS:     2,
		DurationS:   10,
		Machine:     procstat.Machine{Cores: 2, CPUModel: "Test CPU", Kernel: "6.1", MemTotalMB: 24000, GoVersion: "go1.26.8"},
		Connections: Connections{Wanted: 4, Established: 4},
		Sent:        12346, Acked: 12345, Delivered: 12345,
		AckedPerSec: 1234.5, DeliveredPerSec: 1234.4,
		Latencies: []Latency{
			{Name: "send_ack", Summary: hist.Summary{Count: 12345, MeanMs: 1.5, P50Ms: 1.25, P95Ms: 3, P99Ms: 12.5, P999Ms: 40, MaxMs: 150}},
		},
		Errors:       map[string]int64{"50301": 3, "timeout": 1},
		Verification: verify.Tally{Acked: 14000, Expected: 14000, Delivered: 14000, Sync: verify.SyncTally{Reads: 2, Checked: 14000}},
		Processes:    []procstat.Usage{{Target: procstat.Target{Name: "imd", PID: 42}, CPUSeconds: 9.5, CPUCores: 0.79, RSSMB: 80.25, PeakRSSMB: 90}, {Target: procstat.Target{Name: "redis", PID: 43}, Err: "pid 43: gone"}},
		MachineCPU:   0.97,
		// 12,345 ACKed in the window: 5 s of imd is 405 µs a message.
		Window: []procstat.Usage{{Target: procstat.Target{Name: "imd", PID: 42}, CPUSeconds: 5, CPUCores: 0.5},
			{Target: procstat.Target{Name: "mariadbd", PID: 44}, Err: "gone"},
			{Target: procstat.Target{Name: "redis", PID: 43}, CPUSeconds: 2, CPUCores: 0.2}},
	}
}

func TestCosts(t *testing.T) {
	r := sample()
	costs := r.Costs()
	want := []Cost{{"imd", 5, 0.5, 5e6 / 12345}, {"redis", 2, 0.2, 2e6 / 12345}, {TotalCost, 7, 0.7, 7e6 / 12345}}
	if len(costs) != len(want) {
		t.Fatalf("costs %+v", costs)
	}
	for i, c := range costs {
		if c.Name != want[i].Name || c.CPUSeconds != want[i].CPUSeconds || c.MicrosPerMsg-want[i].MicrosPerMsg > 1e-9 || want[i].MicrosPerMsg-c.MicrosPerMsg > 1e-9 {
			t.Errorf("cost %d = %+v, want %+v", i, c, want[i])
		}
	}
	if _, ok := r.Cost("mariadbd"); ok {
		t.Error("an unreadable process has a cost")
	}
	r.Acked = 0
	if c, _ := r.Cost("imd"); c.MicrosPerMsg != 0 || c.CPUSeconds != 5 {
		t.Errorf("nothing ACKed: %+v", c)
	}
	r.Window = nil
	if r.Costs() != nil {
		t.Error("no window, yet costs")
	}
	var buf bytes.Buffer
	if err := WriteMarkdown(&buf, sample()); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"CPU per ACKed message (measured window)", "| imd | 5.00 | 0.50 | 405 |", "| total | 7.00 | 0.70 | 567 |"} {
		if !strings.Contains(buf.String(), line) {
			t.Errorf("markdown lacks %q:\n%s", line, buf.String())
		}
	}
}

func TestJudge(t *testing.T) {
	tests := []struct {
		name     string
		change   func(*Report)
		pass     bool
		problems []string
	}{
		{"clean run", func(*Report) {}, true, nil},
		{"missing delivery", func(r *Report) { r.Verification.Missing = 2 }, false, []string{"2 ACKed deliveries missing"}},
		{"duplicate and lost connection", func(r *Report) { r.Verification.Duplicated = 1; r.Connections.Lost = 3 },
			false, []string{"1 duplicate deliveries", "3 connections lost"}},
		{"too few connections", func(r *Report) { r.Connections.Established = 3 }, false, []string{"3 of 4 connections established"}},
		{"interrupted", func(r *Report) { r.Interrupted = true }, false, []string{"interrupted before the end-of-run checks"}},
		{"read back failed", func(r *Report) { r.ReadBackErrors = 2 }, false, []string{"2 topics could not be read back"}},
		{"slow but correct still passes", func(r *Report) { r.AckedPerSec = 1 }, true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := sample()
			tt.change(&r)
			r.Judge()
			if r.Pass != tt.pass || strings.Join(r.Problems, ";") != strings.Join(tt.problems, ";") {
				t.Fatalf("Pass %v Problems %q, want %v %q", r.Pass, r.Problems, tt.pass, tt.problems)
			}
		})
	}
}

func TestWriteMarkdown(t *testing.T) {
	r := sample()
	r.Judge()
	var b bytes.Buffer
	if err := WriteMarkdown(&b, r); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{
		"## imd bench w1 — p2p: 4 users in 2 friend pairs, closed loop\n",
		"2026-11-29T10:00:00Z · 2 cores · Test CPU · kernel 6.1 · 24000 MB · go1.26.8 · warm-up 2 s, measured 10 s",
		"Parameters: source_ips=127.0.0.1, users=4\n",
		"| metric | value |\n| --- | --- |\n| result | PASS |\n",
		"| ACKed msg/s | 1,235 |",
		"| sent / ACKed / delivered (window) | 12,346 / 12,345 / 12,345 |",
		"| machine CPU busy (all processes) | 97% |",
		"| operation | count | mean | p50 | p95 | p99 | p99.9 | max |",
		"| send_ack | 12,345 | 1.50 | 1.25 | 3.00 | 12.5 | 40.0 | 150 |",
		"| missing | 0 |",
		"| read back: reads / messages checked | 2 / 14,000 |",
		"| 50301 | 3 |\n| timeout | 1 |",
		"| imd | 42 | 9.50 | 0.79 | 80.2 | 90.0 |  |",
		"| redis | 43 | — | — | — | — | pid 43: gone |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q\n%s", want, md)
		}
	}
	for _, line := range strings.Split(strings.TrimSpace(md), "\n") {
		if strings.HasPrefix(line, "|") && !strings.HasSuffix(line, "|") {
			t.Errorf("broken table row %q", line)
		}
	}
}

func TestWriteMarkdownShowsWhatTheWorkloadDid(t *testing.T) {
	tests := []struct {
		name      string
		sent, ops int64
		want      []string
		notWant   []string
	}{
		{"sends only", 10, 0, []string{"| ACKed msg/s |"}, []string{"requests/s"}},
		{"requests only", 0, 10, []string{"| requests/s (see latency) | 1 |"}, []string{"ACKed msg/s"}},
		{"both", 10, 10, []string{"| ACKed msg/s |", "| requests/s (see latency) |"}, nil},
		{"nothing", 0, 0, []string{"| ACKed msg/s |"}, []string{"requests/s"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := sample()
			r.Sent, r.Ops, r.OpsPerSec = tt.sent, tt.ops, float64(tt.ops)/10
			var b bytes.Buffer
			if err := WriteMarkdown(&b, r); err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("lacks %q", w)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(b.String(), w) {
					t.Errorf("has %q", w)
				}
			}
		})
	}
}

func TestWriteMarkdownFailure(t *testing.T) {
	r := sample()
	r.Verification.Missing = 1
	r.Verification.Samples = []string{"p2p_1_2 seq 7 (msg 9) never reached recipient 1"}
	r.Judge()
	var b bytes.Buffer
	if err := WriteMarkdown(&b, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| result | FAIL: 1 ACKed deliveries missing |", "- p2p_1_2 seq 7 (msg 9) never reached recipient 1\n"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("markdown lacks %q\n%s", want, b.String())
		}
	}
}

func TestWriteJSONRoundTrips(t *testing.T) {
	r := sample()
	r.Judge()
	var b bytes.Buffer
	if err := WriteJSON(&b, r); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if back.Latencies[0].P99Ms != 12.5 || back.Errors["50301"] != 3 || !back.Pass || back.Processes[0].PID != 42 {
		t.Fatalf("round trip lost data: %+v", back)
	}
	for _, key := range []string{`"acked_per_s": 1234.5`, `"p99_ms": 12.5`, `"name": "send_ack"`, `"missing": 0`} {
		if !strings.Contains(b.String(), key) {
			t.Errorf("JSON lacks %s", key)
		}
	}
}

func TestThousands(t *testing.T) {
	tests := map[int64]string{0: "0", 12: "12", 999: "999", 1000: "1,000", 1234567: "1,234,567", -1234: "-1,234"}
	for n, want := range tests {
		if got := Thousands(n); got != want {
			t.Errorf("Thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, bytes.ErrTooLarge }

func TestWriteErrors(t *testing.T) {
	if err := WriteJSON(failWriter{}, sample()); err == nil {
		t.Error("WriteJSON hid a write error")
	}
	if err := WriteMarkdown(failWriter{}, sample()); err == nil {
		t.Error("WriteMarkdown hid a write error")
	}
}

func TestWriteSummary(t *testing.T) {
	w1 := sample()
	w1.Judge()
	w5 := sample()
	w5.Workload, w5.Params = "w5", map[string]string{"readers": "4", "tcp": "127.0.0.1:9000"}
	w5.Latencies = append(w5.Latencies, Latency{Name: "connect_auth", Summary: hist.Summary{Count: 4, P99Ms: 3}},
		Latency{Name: "get_history", Summary: hist.Summary{Count: 100, P99Ms: 4.5}})
	w5.Verification.Missing = 1
	w5.Window = nil // an old report, or a run interrupted before its window
	w5.Judge()
	var buf bytes.Buffer
	if err := WriteSummary(&buf, []Report{w1, w5}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"2026-11-29T10:00:00Z · 2 cores · Test CPU · kernel 6.1",
		"| workload | parameters | result | ACKed msg/s | delivered frames/s | p99 SEND_ACK ms | p99 send→delivery ms | p99 other ms | imd cores | mariadbd cores | redis cores | imctl cores | imd peak RSS MB | imd µs/msg | mariadbd µs/msg | redis µs/msg | imctl µs/msg | total µs/msg |",
		"| w1 | users=4 | PASS | 1,235 | 1,234 | 12.5 | — | — | 0.79 | — | — | — | 90 | 405 | — | 162 | — | 567 |",
		"| w5 | readers=4 | FAIL: 1 ACKed deliveries missing | 1,235 | 1,234 | 12.5 | — | 4.50 (get_history) | 0.79 | — | — | — | 90 | — | — | — | — | — |",
	} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, buf.String())
		}
	}
}

// TestClusterRun: a run on a Redis Cluster (bench.sh BENCH_REDIS=cluster) shows each master's
// share, sets the ceiling by the busiest, and sums the masters into the summary's redis columns.
func TestClusterRun(t *testing.T) {
	tests := []struct {
		name      string
		masters   []serverwork.Redis
		wantLines []string
		absent    []string
	}{
		{
			name:    "one Redis",
			masters: []serverwork.Redis{{Addr: "127.0.0.1:16379", Commands: 370_000, MainThreadCPU: 2.469}},
			wantLines: []string{
				"| Redis | commands (scripts' own included) | 29.97 | 370,000 |",
				"Ceiling: the busiest Redis main thread spends 200 µs per ACKed message, so one Redis core carries at most 5,000 msg/s (1 s ÷ 200 µs).",
			},
			absent: []string{"Redis masters"},
		},
		{
			name: "three masters",
			masters: []serverwork.Redis{
				{Addr: "127.0.0.1:16380", Commands: 123_450, MainThreadCPU: 0.61725},
				{Addr: "127.0.0.1:16381", Commands: 246_900, MainThreadCPU: 1.2345},
				{Addr: "127.0.0.1:16382", Commands: 12_345, MainThreadCPU: 0.61725},
			},
			wantLines: []string{
				"| Redis (3 masters) | main-thread CPU µs, all masters | 200.00 | 2.47 s |",
				"| master | commands per ACKed msg | main-thread µs per ACKed msg | share of the masters' CPU |",
				"| 127.0.0.1:16380 | 10.00 | 50 | 25% |",
				"| 127.0.0.1:16381 | 20.00 | 100 | 50% |",
				"| 127.0.0.1:16382 | 1.00 | 50 | 25% |",
				"Ceiling: the busiest of the 3 Redis masters spends 100 µs of its main thread per ACKed message, so with each master on a core of its own the tenant's Redis work stops at 10,000 msg/s (1 s ÷ 100 µs).",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := sample()
			r.Acked = 12345
			r.ServerWork = &serverwork.Snapshot{Redis: tt.masters}
			var b bytes.Buffer
			if err := WriteMarkdown(&b, r); err != nil {
				t.Fatal(err)
			}
			for _, want := range tt.wantLines {
				if !strings.Contains(b.String(), want) {
					t.Errorf("markdown lacks %q:\n%s", want, b.String())
				}
			}
			for _, not := range tt.absent {
				if strings.Contains(b.String(), not) {
					t.Errorf("markdown has %q:\n%s", not, b.String())
				}
			}
		})
	}

	// The masters' processes, named redis:<port>, are the summary's redis.
	r := sample()
	r.Judge()
	r.Processes = []procstat.Usage{{Target: procstat.Target{Name: "imd", PID: 42}, CPUCores: 0.79, PeakRSSMB: 90},
		{Target: procstat.Target{Name: "redis:16380", PID: 50}, CPUCores: 0.25}, {Target: procstat.Target{Name: "redis:16381", PID: 51}, CPUCores: 0.5},
		{Target: procstat.Target{Name: "redisx", PID: 52}, CPUCores: 9}}
	r.Window = []procstat.Usage{{Target: procstat.Target{Name: "imd", PID: 42}, CPUSeconds: 5, CPUCores: 0.5},
		{Target: procstat.Target{Name: "redis:16380", PID: 50}, CPUSeconds: 1, CPUCores: 0.1},
		{Target: procstat.Target{Name: "redis:16381", PID: 51}, CPUSeconds: 1, CPUCores: 0.1}}
	var buf bytes.Buffer
	if err := WriteSummary(&buf, []Report{r}); err != nil {
		t.Fatal(err)
	}
	if want := "| w1 | users=4 | PASS | 1,235 | 1,234 | 12.5 | — | — | 0.79 | — | 0.75 | — | 90 | 405 | — | 162 | — | 567 |"; !strings.Contains(buf.String(), want) {
		t.Errorf("summary lacks %q:\n%s", want, buf.String())
	}
}
