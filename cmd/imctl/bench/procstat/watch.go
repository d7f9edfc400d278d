package procstat

import (
	"io/fs"
	"os"
	"time"
)

// Usage is what a watched process used over a window.
type Usage struct {
	Target
	CPUSeconds float64 `json:"cpu_seconds"`
	// CPUCores is CPU seconds per wall second: 1.0 is one core kept busy.
	CPUCores  float64 `json:"cpu_cores"`
	RSSMB     float64 `json:"rss_mb"`      // at the end
	PeakRSSMB float64 `json:"peak_rss_mb"` // VmHWM at the end: the high-water mark of its life
	Err       string  `json:"error,omitempty"`
}

// Watch takes readings of the machine and some processes at the start and
// end of a window. The benchmark process itself is always watched as
// "imctl", since it shares the machine with the server.
type Watch struct {
	proc    fs.FS
	ticks   int64
	targets []Target
	start   time.Time
	cpu     CPUTimes
	samples map[int]Sample
}

// Start takes the first readings.
func Start(proc fs.FS, targets []Target) *Watch {
	w := &Watch{
		proc:    proc,
		ticks:   ClockTicks(proc),
		targets: append([]Target{{Name: "imctl", PID: os.Getpid()}}, targets...),
		start:   time.Now(),
		samples: make(map[int]Sample),
	}
	w.cpu, _ = ReadCPUTimes(proc)
	for _, t := range w.targets {
		if s, err := ReadProcess(proc, t.PID, w.ticks); err == nil {
			w.samples[t.PID] = s
		}
	}
	return w
}

// Stop takes the last readings and returns each process's usage and the
// machine's CPU utilization (0–1) over the window.
func (w *Watch) Stop() ([]Usage, float64) {
	wall := time.Since(w.start).Seconds()
	cpu, _ := ReadCPUTimes(w.proc)
	var out []Usage
	for _, t := range w.targets {
		u := Usage{Target: t}
		end, err := ReadProcess(w.proc, t.PID, w.ticks)
		first, ok := w.samples[t.PID]
		switch {
		case err != nil:
			u.Err = err.Error()
		case !ok:
			u.Err = "not readable at start"
		default:
			u.CPUSeconds = (end.CPU - first.CPU).Seconds()
			if wall > 0 {
				u.CPUCores = u.CPUSeconds / wall
			}
			u.RSSMB = float64(end.RSSKB) / 1024
			u.PeakRSSMB = float64(end.PeakRSSKB) / 1024
		}
		out = append(out, u)
	}
	return out, Utilization(w.cpu, cpu)
}
