package report

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"
)

// summaryProcesses are the processes a summary shows, in this order, when the runs measured
// them.
var summaryProcesses = []string{"imd", "mariadbd", "redis", "imctl"}

// WriteSummary writes the headline figures of several runs (one `task bench`) as one markdown
// table, a line per run, under the machine of the first. The cores columns are over the whole
// run (setup and read-back included); the µs/msg columns are CPU over the measured window per
// message ACKed in it, the total summing every measured process.
func WriteSummary(w io.Writer, runs []Report) error {
	var b strings.Builder
	b.WriteString("## imd bench summary\n\n")
	if len(runs) > 0 {
		m := runs[0].Machine
		fmt.Fprintf(&b, "%s · %d cores · %s · kernel %s · %d MB · %s\n\n",
			runs[0].Started.UTC().Format(time.RFC3339), m.Cores, orDash(m.CPUModel), orDash(m.Kernel), m.MemTotalMB, m.GoVersion)
	}
	header := []string{"workload", "parameters", "result", "ACKed msg/s", "delivered frames/s", "p99 SEND_ACK ms", "p99 send→delivery ms", "p99 other ms"}
	for _, p := range summaryProcesses {
		header = append(header, p+" cores")
	}
	header = append(header, "imd peak RSS MB")
	for _, p := range append(summaryProcesses, TotalCost) {
		header = append(header, p+" µs/msg")
	}
	var rows [][]string
	for _, r := range runs {
		result := "PASS"
		if !r.Pass {
			result = "FAIL: " + strings.Join(r.Problems, "; ")
		}
		var params []string
		for _, k := range slices.Sorted(maps.Keys(r.Params)) {
			if k != "tcp" && k != "tenant" && k != "tls" && k != "proxy" && k != "source_ips" && k != "topic" {
				params = append(params, k+"="+r.Params[k])
			}
		}
		row := []string{r.Workload, strings.Join(params, " "), result, rate(r.AckedPerSec), rate(r.DeliveredPerSec),
			r.p99("send_ack"), r.p99("send_to_delivery"), r.otherP99()}
		for _, p := range summaryProcesses {
			row = append(row, r.cores(p))
		}
		row = append(row, r.peakRSS("imd"))
		for _, p := range append(summaryProcesses, TotalCost) {
			row = append(row, r.micros(p))
		}
		rows = append(rows, row)
	}
	table(&b, header, rows)
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("report: write summary: %w", err)
	}
	return nil
}

// p99 is the p99 of the named latency, or "—" when the run has none.
func (r Report) p99(name string) string {
	for _, l := range r.Latencies {
		if l.Name == name && l.Count > 0 {
			return ms(l.P99Ms)
		}
	}
	return "—"
}

// otherP99 is the p99 of the workload's own request (heartbeat, get_history), with its name.
func (r Report) otherP99() string {
	for _, l := range r.Latencies {
		switch l.Name {
		case "send_ack", "send_to_delivery", "connect_auth":
			continue
		}
		if l.Count > 0 {
			return ms(l.P99Ms) + " (" + l.Name + ")"
		}
	}
	return "—"
}

func (r Report) cores(name string) string {
	var cores float64
	found := false
	for _, p := range r.Processes {
		if ofProcess(p.Name, name) && p.Err == "" {
			cores, found = cores+p.CPUCores, true
		}
	}
	if !found {
		return "—"
	}
	return fmt.Sprintf("%.2f", cores)
}

// micros is the named process's CPU µs per ACKed message over the measured window.
func (r Report) micros(name string) string {
	var us float64
	found := false
	for _, c := range r.Costs() {
		if ofProcess(c.Name, name) {
			us, found = us+c.MicrosPerMsg, true
		}
	}
	if !found {
		return "—"
	}
	return micros(us)
}

// ofProcess tells whether a measured target is the summary's process name: the process
// itself, or one of several that together play its part, named name:instance (the masters
// of a Redis Cluster, "redis:16380"; bench.sh BENCH_REDIS=cluster).
func ofProcess(target, name string) bool {
	return target == name || strings.HasPrefix(target, name+":")
}

func (r Report) peakRSS(name string) string {
	for _, p := range r.Processes {
		if p.Name == name && p.Err == "" {
			return fmt.Sprintf("%.0f", p.PeakRSSMB)
		}
	}
	return "—"
}
