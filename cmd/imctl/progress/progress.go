// Package progress measures long operations as imctl watches them: phase, done of total, a
// rate over a sliding window of what this watcher saw, and the ETA that rate gives. Every
// long command (migration copy and verify, archive, restore, reindex, retention) reports
// through one Meter, so they all read alike.
package progress

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// DefaultWindow is how far back the rate looks: long enough to smooth batch jitter, short
// enough to follow a change of speed (a rate cap, a pause) within half a minute.
const DefaultWindow = 30 * time.Second

// minSpan is the least time two samples must span before a rate is shown: over less, one
// batch landing between polls would read as an absurd speed.
const minSpan = 2 * time.Second

type sample struct {
	at   time.Time
	done int64
}

// Meter follows one counter. The zero value is not usable; see New.
type Meter struct {
	window  time.Duration
	phase   string
	total   int64
	samples []sample // oldest first, within window of the newest (plus one older)
}

// New returns a meter whose rate looks back window.
func New(window time.Duration) *Meter { return &Meter{window: window} }

// Observe records that done of total units were done at at, in phase. A new phase, or a
// counter that went back (a rerun), starts the measurement over: a rate never mixes two
// kinds of work.
func (m *Meter) Observe(at time.Time, phase string, done, total int64) {
	if phase != m.phase || (len(m.samples) > 0 && done < m.samples[len(m.samples)-1].done) {
		m.samples = m.samples[:0]
	}
	m.phase, m.total = phase, total
	m.samples = append(m.samples, sample{at: at, done: done})
	// Keep one sample older than the window, so the window is always spanned in full.
	cut := 0
	for cut+1 < len(m.samples) && at.Sub(m.samples[cut+1].at) >= m.window {
		cut++
	}
	m.samples = m.samples[cut:]
}

// Done is the last observed count.
func (m *Meter) Done() int64 {
	if len(m.samples) == 0 {
		return 0
	}
	return m.samples[len(m.samples)-1].done
}

// Rate is units per second over the window; false until the samples span minSpan.
func (m *Meter) Rate() (float64, bool) {
	if len(m.samples) < 2 {
		return 0, false
	}
	first, last := m.samples[0], m.samples[len(m.samples)-1]
	span := last.at.Sub(first.at)
	if span < minSpan {
		return 0, false
	}
	return float64(last.done-first.done) / span.Seconds(), true
}

// ETA is the time the rest takes at Rate; false when there is no rate, or no progress
// within the window (stalled: no honest estimate).
func (m *Meter) ETA() (time.Duration, bool) {
	rate, ok := m.Rate()
	if !ok || rate <= 0 || m.total <= 0 {
		return 0, false
	}
	left := m.total - m.Done()
	if left <= 0 {
		return 0, true
	}
	return time.Duration(float64(left) / rate * float64(time.Second)).Round(time.Second), true
}

// Line renders the meter: "copying: 412,000 of 1,000,000 rows (41%), 18,500 rows/s, ETA 32s".
// A count without a total shows no share and no ETA.
func (m *Meter) Line(unit string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s", m.phase, Count(m.Done()))
	if m.total > 0 {
		fmt.Fprintf(&b, " of %s %s (%d%%)", Count(m.total), unit, m.Done()*100/m.total)
	} else {
		fmt.Fprintf(&b, " %s", unit)
	}
	rate, ok := m.Rate()
	switch {
	case !ok:
		b.WriteString(", measuring speed")
		return b.String()
	case rate <= 0:
		fmt.Fprintf(&b, ", no progress for %s", m.samples[len(m.samples)-1].at.Sub(m.samples[0].at).Round(time.Second))
		return b.String()
	}
	fmt.Fprintf(&b, ", %s %s/s", Count(int64(rate+0.5)), unit)
	if eta, ok := m.ETA(); ok {
		fmt.Fprintf(&b, ", ETA %s", eta)
	}
	return b.String()
}

// Count writes n with thousands separators: 1000000 → 1,000,000.
func Count(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
