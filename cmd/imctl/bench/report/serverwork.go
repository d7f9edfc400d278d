package report

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/imdhq/imd/cmd/imctl/bench/serverwork"
)

// topCommands is how many of Redis's busiest commands the report lists.
const topCommands = 8

// RedisCeiling is the ceiling the Redis main thread of the busiest master sets: its CPU per
// ACKed message, and the messages per second that one core allows (1 s ÷ that). ok is false
// when the run measured no Redis counters or ACKed nothing.
func (r Report) RedisCeiling() (microsPerMsg, msgPerSec float64, ok bool) {
	if r.ServerWork == nil || len(r.ServerWork.Redis) == 0 || r.Acked == 0 {
		return 0, 0, false
	}
	busiest := slices.MaxFunc(r.ServerWork.Redis, func(a, b serverwork.Redis) int { return cmp.Compare(a.MainThreadCPU, b.MainThreadCPU) })
	microsPerMsg = busiest.MainThreadCPU * 1e6 / float64(r.Acked)
	if microsPerMsg <= 0 {
		return 0, 0, false
	}
	return microsPerMsg, 1e6 / microsPerMsg, true
}

// writeServerWork adds the servers' work per ACKed message and the Redis ceiling line.
func writeServerWork(b *strings.Builder, r Report) {
	w := r.ServerWork
	if w == nil || r.Acked == 0 {
		return
	}
	per := func(n float64) string { return fmt.Sprintf("%.2f", n/float64(r.Acked)) }
	b.WriteString("\nServer work per ACKed message (measured window)\n\n")
	var rows [][]string
	all := map[string]serverwork.Command{} // every master's, summed
	var cpu float64                        // every master's main thread, s
	if len(w.Redis) > 0 {
		var commands, reads int64
		for _, s := range w.Redis {
			commands += s.Commands
			reads += s.Reads
			cpu += s.MainThreadCPU
			for name, c := range s.ByCommand {
				sum := all[name]
				all[name] = serverwork.Command{Calls: sum.Calls + c.Calls, Usec: sum.Usec + c.Usec}
			}
		}
		label := "Redis"
		if len(w.Redis) > 1 {
			label = fmt.Sprintf("Redis (%d masters)", len(w.Redis))
		}
		rows = append(rows,
			[]string{label, "commands (scripts' own included)", per(float64(commands)), Thousands(commands)},
			[]string{label, "round trips (client read events)", per(float64(reads)), Thousands(reads)},
			[]string{label, "main-thread CPU µs, all masters", per(cpu * 1e6), fmt.Sprintf("%.2f s", cpu)})
	}
	if m := w.MySQL; m != nil {
		rows = append(rows,
			[]string{"MySQL", "rows written (handler writes, updates, deletes)", per(float64(m.RowsWritten)), Thousands(m.RowsWritten)},
			[]string{"MySQL", "COMMITs", per(float64(m.Commits)), Thousands(m.Commits)},
			[]string{"MySQL", "InnoDB fsyncs", per(float64(m.Fsyncs)), Thousands(m.Fsyncs)})
	}
	table(b, []string{"server", "figure", "per ACKed msg", "window"}, rows)
	if len(w.Redis) > 1 {
		writeMasters(b, r, cpu)
	}
	if us, ceiling, ok := r.RedisCeiling(); ok {
		if len(w.Redis) > 1 {
			fmt.Fprintf(b, "\nCeiling: the busiest of the %d Redis masters spends %.0f µs of its main thread per ACKed message, so with each master on a core of its own the tenant's Redis work stops at %s msg/s (1 s ÷ %.0f µs).\n",
				len(w.Redis), us, rate(ceiling), us)
		} else {
			fmt.Fprintf(b, "\nCeiling: the busiest Redis main thread spends %.0f µs per ACKed message, so one Redis core carries at most %s msg/s (1 s ÷ %.0f µs).\n",
				us, rate(ceiling), us)
		}
	}
	if len(all) > 0 {
		writeRedisCommands(b, r, all)
	}
}

// writeMasters shows how a tenant's Redis work spread over the masters of a cluster (DESIGN
// §11, issue 30 part 1): each master's share of the commands and of the main-thread CPU, by
// which the busiest one sets the ceiling. cpu is the masters' main-thread CPU together.
func writeMasters(b *strings.Builder, r Report, cpu float64) {
	b.WriteString("\nRedis masters (measured window)\n\n")
	var rows [][]string
	for _, s := range r.ServerWork.Redis {
		share := "—"
		if cpu > 0 {
			share = fmt.Sprintf("%.0f%%", 100*s.MainThreadCPU/cpu)
		}
		rows = append(rows, []string{s.Addr, fmt.Sprintf("%.2f", float64(s.Commands)/float64(r.Acked)),
			fmt.Sprintf("%.0f", s.MainThreadCPU*1e6/float64(r.Acked)), share})
	}
	table(b, []string{"master", "commands per ACKed msg", "main-thread µs per ACKed msg", "share of the masters' CPU"}, rows)
}

// writeRedisCommands lists the commands Redis spent most time in.
func writeRedisCommands(b *strings.Builder, r Report, all map[string]serverwork.Command) {
	names := slices.SortedFunc(maps.Keys(all), func(x, y string) int {
		return cmp.Or(cmp.Compare(all[y].Usec, all[x].Usec), cmp.Compare(x, y))
	})
	if len(names) > topCommands {
		names = names[:topCommands]
	}
	b.WriteString("\nRedis commands by time (a script's time includes the commands it ran)\n\n")
	var rows [][]string
	for _, n := range names {
		c := all[n]
		rows = append(rows, []string{n, fmt.Sprintf("%.2f", float64(c.Calls)/float64(r.Acked)), fmt.Sprintf("%.1f", float64(c.Usec)/float64(r.Acked))})
	}
	table(b, []string{"command", "calls per ACKed msg", "µs per ACKed msg"}, rows)
}
