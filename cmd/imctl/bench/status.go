package bench

import (
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/imdhq/imd/cmd/imctl/bench/hist"
	"github.com/imdhq/imd/cmd/imctl/bench/report"
)

// logEvery is how often a non-terminal status gets a line.
const logEvery = 5 * time.Second

// progress shows a setup step: a bar on a terminal, one line when done
// otherwise.
type progress struct {
	bar   *progressbar.ProgressBar
	w     io.Writer
	desc  string
	start time.Time
	n     atomic.Int64
}

func (r *run) newProgress(desc string, total int) *progress {
	p := &progress{w: r.cfg.Status, desc: desc, start: time.Now()}
	if r.cfg.Live && r.cfg.Status != nil {
		p.bar = progressbar.NewOptions(total,
			progressbar.OptionSetWriter(r.cfg.Status),
			progressbar.OptionSetDescription(desc),
			progressbar.OptionShowCount(),
			progressbar.OptionSetWidth(30),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionClearOnFinish(),
		)
	}
	return p
}

func (p *progress) add() {
	p.n.Add(1)
	if p.bar != nil {
		_ = p.bar.Add(1)
	}
}

func (p *progress) done() {
	if p.bar != nil {
		_ = p.bar.Finish()
	}
	if p.w != nil {
		fmt.Fprintf(p.w, "%s: %d done in %s\n", p.desc, p.n.Load(), time.Since(p.start).Round(time.Millisecond))
	}
}

// startStatus shows the load's progress every second until the returned
// stop is called: a progress bar whose text is the current rates and p99.
func (r *run) startStatus(w workload, total time.Duration) (stop func()) {
	if r.cfg.Status == nil {
		return func() {}
	}
	quit, finished := make(chan struct{}), make(chan struct{})
	var bar *progressbar.ProgressBar
	if r.cfg.Live {
		bar = progressbar.NewOptions64(int64(total.Seconds()+0.5),
			progressbar.OptionSetWriter(r.cfg.Status),
			progressbar.OptionSetWidth(20),
			progressbar.OptionShowDescriptionAtLineEnd(),
			progressbar.OptionSetPredictTime(false),
			progressbar.OptionClearOnFinish(),
		)
	}
	go func() {
		defer close(finished)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		prev := r.sample()
		lastLog := time.Now()
		for {
			select {
			case <-quit:
				if bar != nil {
					_ = bar.Finish()
				}
				return
			case <-tick.C:
			}
			cur := r.sample()
			line := statusLine(r.phase(), w.opName(), prev, cur)
			prev = cur
			if bar != nil {
				bar.Describe(line)
				_ = bar.Set64(int64(r.loadElapsed().Seconds()))
			} else if time.Since(lastLog) >= logEvery {
				fmt.Fprintln(r.cfg.Status, line)
				lastLog = time.Now()
			}
		}
	}()
	return func() {
		close(quit)
		<-finished
	}
}

// loadElapsed is the time since the load started.
func (r *run) loadElapsed() time.Duration {
	return time.Duration(r.since(time.Now()) - r.windowStart.Load() + int64(r.cfg.Warmup))
}

// phase names where the load is.
func (r *run) phase() string {
	if r.since(time.Now()) < r.windowStart.Load() {
		return "warm-up"
	}
	return "measuring"
}

// sample is the counters the status line differentiates.
type sample struct {
	at                    time.Time
	acked, delivered, ops int64
	errors, pending       int64
	latency               hist.Snapshot
}

func (r *run) sample() sample {
	return sample{
		at:        time.Now(),
		acked:     r.ackedAll.Load(),
		delivered: r.deliveredAll.Load(),
		ops:       r.opsAll.Load(),
		errors:    r.errs.total(),
		pending:   r.v.Pending(),
		latency:   r.liveLat.Snapshot(),
	}
}

// statusLine renders one second of progress, e.g.
// "measuring · 18,234 ACK/s · 163,950 deliveries/s · p99 4.20 ms · pending 12 · errors 0".
func statusLine(phase, op string, prev, cur sample) string {
	secs := cur.at.Sub(prev.at).Seconds()
	if secs <= 0 {
		secs = 1
	}
	per := func(a, b int64) string { return report.Thousands(int64(float64(b-a)/secs + 0.5)) }
	line := phase
	if cur.acked > prev.acked || cur.delivered > prev.delivered || op == "" {
		line += " · " + per(prev.acked, cur.acked) + " ACK/s · " + per(prev.delivered, cur.delivered) + " deliveries/s"
	}
	if op != "" {
		line += " · " + per(prev.ops, cur.ops) + " " + op + "/s"
	}
	line += fmt.Sprintf(" · p99 %.2f ms · pending %s · errors %s",
		hist.Millis(cur.latency.Sub(prev.latency).Quantile(0.99)), report.Thousands(cur.pending), report.Thousands(cur.errors))
	return line
}
