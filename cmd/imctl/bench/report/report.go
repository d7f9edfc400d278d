// Package report is the outcome of one benchmark run, written as JSON for
// machines and as a markdown table for people.
package report

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/imdhq/imd/cmd/imctl/bench/hist"
	"github.com/imdhq/imd/cmd/imctl/bench/procstat"
	"github.com/imdhq/imd/cmd/imctl/bench/serverwork"
	"github.com/imdhq/imd/cmd/imctl/bench/verify"
)

// Report is one run.
type Report struct {
	Workload    string            `json:"workload"`
	Description string            `json:"description"`
	Params      map[string]string `json:"params"`
	Started     time.Time         `json:"started"`
	WarmupS     float64           `json:"warmup_s"`
	DurationS   float64           `json:"duration_s"` // the measured window, after warm-up
	Machine     procstat.Machine  `json:"machine"`

	Connections Connections `json:"connections"`
	Sent        int64       `json:"sent"`  // SEND_MESSAGEs whose first attempt started in the window
	Acked       int64       `json:"acked"` // SEND_ACKs received in the window
	Retries     int64       `json:"retries"`
	GaveUp      int64       `json:"gave_up"` // sends abandoned after their retries
	Delivered   int64       `json:"delivered"`
	// Ops counts other requests in the window (GET_HISTORY pages, heartbeats).
	Ops             int64   `json:"ops,omitempty"`
	AckedPerSec     float64 `json:"acked_per_s"`
	DeliveredPerSec float64 `json:"delivered_per_s"`
	OpsPerSec       float64 `json:"ops_per_s,omitempty"`

	Latencies    []Latency        `json:"latencies"`
	Errors       map[string]int64 `json:"errors"`
	Verification verify.Tally     `json:"verification"`
	// ReadBackErrors counts topics whose read-back failed, so went unchecked.
	ReadBackErrors int              `json:"read_back_errors"`
	Processes      []procstat.Usage `json:"processes"`
	// Window is the processes' use over the measured window alone: the base of the CPU cost
	// per ACKed message (CostPerMessage).
	Window []procstat.Usage `json:"window_processes,omitempty"`
	// ServerWork is what Redis and MySQL did over the measured window (bench --redis,
	// --mysql-dsn): divided by the window's ACKs in WriteMarkdown.
	ServerWork  *serverwork.Snapshot `json:"server_work,omitempty"`
	MachineCPU  float64              `json:"machine_cpu_utilization"` // 0–1, all cores, over the whole run
	Interrupted bool                 `json:"interrupted,omitempty"`   // stopped early: the end-of-run checks were skipped
	Pass        bool                 `json:"pass"`
	Problems    []string             `json:"problems,omitempty"`
}

// Connections counts the client connections of a run.
type Connections struct {
	Wanted      int `json:"wanted"`
	Established int `json:"established"`
	Lost        int `json:"lost"` // closed by the server or the network during the run
}

// Latency is the distribution of one kind of operation.
type Latency struct {
	Name string `json:"name"`
	hist.Summary
}

// Judge sets Pass and Problems: a run passes only when every guarantee held
// and no connection was lost, whatever its speed.
func (r *Report) Judge() {
	r.Problems = r.Verification.Problems()
	if r.Interrupted {
		r.Problems = append(r.Problems, "interrupted before the end-of-run checks")
	}
	if r.Connections.Lost > 0 {
		r.Problems = append(r.Problems, fmt.Sprintf("%d connections lost", r.Connections.Lost))
	}
	if r.ReadBackErrors > 0 {
		r.Problems = append(r.Problems, fmt.Sprintf("%d topics could not be read back", r.ReadBackErrors))
	}
	if r.Connections.Established < r.Connections.Wanted {
		r.Problems = append(r.Problems, fmt.Sprintf("%d of %d connections established", r.Connections.Established, r.Connections.Wanted))
	}
	r.Pass = len(r.Problems) == 0
}

// WriteJSON writes the report as indented JSON.
func WriteJSON(w io.Writer, r Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("report: write JSON: %w", err)
	}
	return nil
}

// WriteMarkdown writes the report as markdown tables.
func WriteMarkdown(w io.Writer, r Report) error {
	var b strings.Builder
	fmt.Fprintf(&b, "## imd bench %s — %s\n\n", r.Workload, r.Description)
	m := r.Machine
	fmt.Fprintf(&b, "%s · %d cores · %s · kernel %s · %d MB · %s · warm-up %s, measured %s\n\n",
		r.Started.UTC().Format(time.RFC3339), m.Cores, orDash(m.CPUModel), orDash(m.Kernel), m.MemTotalMB, m.GoVersion,
		seconds(r.WarmupS), seconds(r.DurationS))
	if len(r.Params) > 0 {
		var ps []string
		for _, k := range slices.Sorted(maps.Keys(r.Params)) {
			ps = append(ps, k+"="+r.Params[k])
		}
		fmt.Fprintf(&b, "Parameters: %s\n\n", strings.Join(ps, ", "))
	}

	result := "PASS"
	if !r.Pass {
		result = "FAIL: " + strings.Join(r.Problems, "; ")
	}
	rows := [][]string{{"result", result}}
	// Workloads that only send, only request, or both: show what they did.
	if r.Sent > 0 || r.Ops == 0 {
		rows = append(rows,
			[]string{"ACKed msg/s", rate(r.AckedPerSec)},
			[]string{"delivered frames/s", rate(r.DeliveredPerSec)},
			[]string{"sent / ACKed / delivered (window)", fmt.Sprintf("%s / %s / %s", Thousands(r.Sent), Thousands(r.Acked), Thousands(r.Delivered))},
			[]string{"retries / gave up", fmt.Sprintf("%s / %s", Thousands(r.Retries), Thousands(r.GaveUp))})
	}
	if r.Ops > 0 {
		rows = append(rows, []string{"requests/s (see latency)", rate(r.OpsPerSec)})
	}
	rows = append(rows,
		[]string{"connections wanted / up / lost", fmt.Sprintf("%s / %s / %s", Thousands(int64(r.Connections.Wanted)), Thousands(int64(r.Connections.Established)), Thousands(int64(r.Connections.Lost)))},
		[]string{"machine CPU busy (all processes)", fmt.Sprintf("%.0f%%", r.MachineCPU*100)})
	table(&b, []string{"metric", "value"}, rows)

	if len(r.Latencies) > 0 {
		b.WriteString("\nLatency (ms)\n\n")
		var rows [][]string
		for _, l := range r.Latencies {
			rows = append(rows, []string{l.Name, Thousands(int64(l.Count)), ms(l.MeanMs), ms(l.P50Ms), ms(l.P95Ms), ms(l.P99Ms), ms(l.P999Ms), ms(l.MaxMs)})
		}
		table(&b, []string{"operation", "count", "mean", "p50", "p95", "p99", "p99.9", "max"}, rows)
	}

	v := r.Verification
	b.WriteString("\nVerification (whole run, warm-up included)\n\n")
	table(&b, []string{"check", "count"}, [][]string{
		{"ACKed messages", Thousands(v.Acked)},
		{"expected deliveries", Thousands(v.Expected)},
		{"delivered", Thousands(v.Delivered)},
		{"missing", Thousands(v.Missing)},
		{"duplicated", Thousands(v.Duplicated)},
		{"out of order", Thousands(v.OutOfOrder)},
		{"unexpected (never ACKed)", Thousands(v.Unexpected)},
		{"offline recipients", Thousands(int64(v.Offline))},
		{"read back: reads / messages checked", fmt.Sprintf("%s / %s", Thousands(int64(v.Sync.Reads)), Thousands(v.Sync.Checked))},
		{"read back: repeated / misordered", fmt.Sprintf("%s / %s", Thousands(v.Sync.Repeated), Thousands(v.Sync.Unordered))},
		{"read back: missing / other msg_id", fmt.Sprintf("%s / %s", Thousands(v.Sync.Missing), Thousands(v.Sync.Mismatched))},
		{"seq ACKed for two messages", Thousands(v.Sync.AckConflicts)},
	})
	if samples := append(slices.Clone(v.Samples), v.Sync.Samples...); len(samples) > 0 {
		b.WriteString("\nExamples:\n\n")
		for _, s := range samples {
			fmt.Fprintf(&b, "- %s\n", s)
		}
	}

	if len(r.Errors) > 0 {
		b.WriteString("\nErrors\n\n")
		var rows [][]string
		for _, k := range slices.Sorted(maps.Keys(r.Errors)) {
			rows = append(rows, []string{k, Thousands(r.Errors[k])})
		}
		table(&b, []string{"error", "count"}, rows)
	}

	if len(r.Processes) > 0 {
		b.WriteString("\nProcesses (over the whole run)\n\n")
		var rows [][]string
		for _, p := range r.Processes {
			if p.Err != "" {
				rows = append(rows, []string{p.Name, strconv.Itoa(p.PID), "—", "—", "—", "—", p.Err})
				continue
			}
			rows = append(rows, []string{p.Name, strconv.Itoa(p.PID), fmt.Sprintf("%.2f", p.CPUSeconds), fmt.Sprintf("%.2f", p.CPUCores),
				fmt.Sprintf("%.1f", p.RSSMB), fmt.Sprintf("%.1f", p.PeakRSSMB), ""})
		}
		table(&b, []string{"process", "pid", "CPU s", "cores", "RSS MB", "peak RSS MB", "note"}, rows)
	}
	if costs := r.Costs(); len(costs) > 0 {
		b.WriteString("\nCPU per ACKed message (measured window)\n\n")
		var rows [][]string
		for _, c := range costs {
			rows = append(rows, []string{c.Name, fmt.Sprintf("%.2f", c.CPUSeconds), fmt.Sprintf("%.2f", c.Cores), micros(c.MicrosPerMsg)})
		}
		table(&b, []string{"process", "CPU s", "cores", "µs per ACKed msg"}, rows)
	}
	writeServerWork(&b, r)
	_, err := io.WriteString(w, b.String())
	if err != nil {
		return fmt.Errorf("report: write markdown: %w", err)
	}
	return nil
}

// TotalCost names the sum of every measured process in Costs.
const TotalCost = "total"

// Cost is one process's CPU over the measured window and per message ACKed in it.
type Cost struct {
	Name         string
	CPUSeconds   float64
	Cores        float64
	MicrosPerMsg float64 // CPU µs per ACKed message; 0 when nothing was ACKed
}

// Costs are the CPU costs of the window's processes, in the order measured, then their total;
// none when the run measured no window (an interrupted run, an old report).
func (r Report) Costs() []Cost {
	var out []Cost
	total := Cost{Name: TotalCost}
	for _, p := range r.Window {
		if p.Err != "" {
			continue
		}
		c := Cost{Name: p.Name, CPUSeconds: p.CPUSeconds, Cores: p.CPUCores}
		total.CPUSeconds += p.CPUSeconds
		total.Cores += p.CPUCores
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil
	}
	out = append(out, total)
	if r.Acked > 0 {
		for i := range out {
			out[i].MicrosPerMsg = out[i].CPUSeconds * 1e6 / float64(r.Acked)
		}
	}
	return out
}

// Cost is the named process's cost (TotalCost for all of them), ok false when not measured.
func (r Report) Cost(name string) (Cost, bool) {
	for _, c := range r.Costs() {
		if c.Name == name {
			return c, true
		}
	}
	return Cost{}, false
}

func micros(v float64) string {
	if v == 0 {
		return "—"
	}
	return fmt.Sprintf("%.0f", v)
}

// table writes a markdown table; cells must not hold '|'.
func table(b *strings.Builder, header []string, rows [][]string) {
	line := func(cells []string) {
		b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
	}
	line(header)
	seps := make([]string, len(header))
	for i := range seps {
		seps[i] = "---"
	}
	line(seps)
	for _, r := range rows {
		line(r)
	}
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

func seconds(s float64) string { return strconv.FormatFloat(s, 'f', -1, 64) + " s" }

func ms(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

func rate(v float64) string { return Thousands(int64(v + 0.5)) }

// Thousands groups digits by thousands: 1234567 → 1,234,567.
func Thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var out []byte
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	if neg {
		return "-" + string(out)
	}
	return string(out)
}
