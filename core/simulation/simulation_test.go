package simulation

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/signal"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

var (
	flagSeed     = flag.Uint64("sim.seed", 0, "replay this seed only (0: the CI seeds)")
	flagSteps    = flag.Int("sim.steps", 4000, "steps per seed")
	flagSeeds    = flag.Int("sim.seeds", 4, "the fixed seeds the CI run tries: 1..N")
	flagRotating = flag.Int("sim.rotating", 4, "how many more seeds the CI run derives from the commit ("+rotationEnv+", else git rev-parse HEAD)")
	flagList     = flag.Bool("sim.list", false, "print the CI seeds and run none")
	flagOnly     = flag.String("sim.only", "", "replay only these step indexes of the seed (comma-separated), as a shrunk failure prints them")
	flagForever  = flag.Duration("sim.forever", 0, "run random seeds for this long (or until Ctrl-C or the first failure), printing progress")
	flagTrace    = flag.Bool("sim.trace", false, "print what each step did")
)

// openDefects are failures the simulator finds in today's code whose fix is under way in its
// issue: a run notes each (the test logs it) and goes on checking everything else. An entry
// goes when its fix lands; its seeds then replay the failure until it does.
var openDefects = []struct {
	issue string
	class *regexp.Regexp
}{}

func openDefect(violation string) (string, bool) {
	for _, d := range openDefects {
		if d.class.MatchString(violation) {
			return d.issue, true
		}
	}
	return "", false
}

// outcome of one run: the first step after which an invariant failed (-1: none), and what.
type outcome struct {
	failedAt   int
	violations []string
	// open: the first violation of each open defect seen, by issue.
	open   map[string]string
	traces []string
	stats  stats
}

// settle moves the violations of open defects out of the world's list into o.open and
// reports whether any other is left.
func (o *outcome) settle(w *world, step int) bool {
	rest := w.model.violations[:0]
	for _, v := range w.model.violations {
		issue, ok := openDefect(v)
		if !ok {
			rest = append(rest, v)
			continue
		}
		if _, seen := o.open[issue]; !seen {
			o.open[issue] = fmt.Sprintf("step %d: %s", step, v)
		}
	}
	w.model.violations = rest
	return len(rest) > 0
}

// options of a run.
type options struct {
	trace bool
	// keepGoing runs every step even after an invariant failed (to compare whole runs).
	keepGoing bool
}

// run executes steps on a fresh world, checking the invariants after each, and heals and
// checks the settled invariants at the end.
func run(steps []step, opt options) (outcome, error) {
	w, err := newWorld()
	if err != nil {
		return outcome{}, err
	}
	w.traceOn = opt.trace
	o := outcome{failedAt: -1, open: map[string]string{}}
	done := func(at int) (outcome, error) {
		o.failedAt, o.violations, o.traces, o.stats = at, w.model.violations, w.traces, w.stats
		return o, nil
	}
	for i, s := range steps {
		w.trace("#%d %s", i, s)
		w.exec(s)
		w.check()
		if opt.keepGoing {
			for _, v := range w.model.violations {
				w.trace("violated: %s", v)
			}
			w.model.violations = nil
		}
		if o.settle(w, i) {
			w.trace("state: %s", w)
			return done(i)
		}
	}
	w.trace("heal: %s", w)
	w.heal()
	if o.settle(w, len(steps)) {
		return done(len(steps))
	}
	return done(-1)
}

// classOf is a violation without its numbers: the same failure in a shorter run names other
// tokens, seqs and ids.
func classOf(violation string) string { return digits.ReplaceAllString(violation, "N") }

var digits = regexp.MustCompile(`[0-9]+`)

// shrink drops steps while the run still fails the same way (the first violation's class),
// chunks first, then single steps.
func shrink(t testing.TB, indexes []int, all []step, violation string) []int {
	class := classOf(violation)
	fails := func(idx []int) bool {
		steps := make([]step, len(idx))
		for i, j := range idx {
			steps[i] = all[j]
		}
		o, err := run(steps, options{})
		if err != nil {
			t.Fatal(err)
		}
		return slices.ContainsFunc(o.violations, func(v string) bool { return classOf(v) == class })
	}
	for chunk := len(indexes) / 2; chunk >= 1; chunk /= 2 {
		for start := 0; start < len(indexes); {
			end := min(start+chunk, len(indexes))
			candidate := slices.Concat(indexes[:start], indexes[end:])
			if len(candidate) > 0 && fails(candidate) {
				indexes = candidate
				continue
			}
			start = end
		}
	}
	return indexes
}

// report shrinks a failing seed and prints how to replay what is left.
func report(t testing.TB, seed uint64, n int, o outcome) {
	all := generate(seed, n)
	prefix := make([]int, 0, o.failedAt+1)
	for i := range min(o.failedAt+1, n) {
		prefix = append(prefix, i)
	}
	short := shrink(t, prefix, all, o.violations[0])
	steps := make([]step, len(short))
	var idx []string
	for i, j := range short {
		steps[i] = all[j]
		idx = append(idx, strconv.Itoa(j))
	}
	replay, err := run(steps, options{trace: true})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "simulation seed %d failed after step %d of %d:\n  %s\n", seed, o.failedAt, n, strings.Join(o.violations, "\n  "))
	fmt.Fprintf(&b, "shortest step list found (%d steps), which fails with:\n  %s\n", len(short), strings.Join(replay.violations, "\n  "))
	for _, line := range replay.traces {
		fmt.Fprintf(&b, "    %s\n", line)
	}
	fmt.Fprintf(&b, "replay: go test ./core/simulation -run Simulation -sim.seed=%d -sim.steps=%d -sim.only=%s -sim.trace",
		seed, n, strings.Join(idx, ","))
	t.Error(b.String())
}

// TestSimulation runs the CI seeds (or the one given by -sim.seed), each for -sim.steps steps.
func TestSimulation(t *testing.T) {
	if *flagForever > 0 {
		t.Skip("-sim.forever runs TestSimulationForever")
	}
	seeds := []uint64{*flagSeed}
	if *flagSeed == 0 {
		var from string
		seeds, from = ciSeeds(*flagSeeds, *flagRotating)
		line := fmt.Sprintf("simulation seeds: %v (%s); replay one: go test ./core/simulation -run Simulation -sim.seed=N", seeds, from)
		if *flagList {
			fmt.Println(line)
			t.Skip("-sim.list")
		}
		t.Log(line)
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			t.Parallel()
			all := generate(seed, *flagSteps)
			steps := all
			if *flagOnly != "" {
				steps = nil
				for _, f := range strings.Split(*flagOnly, ",") {
					i, err := strconv.Atoi(f)
					if err != nil || i < 0 || i >= len(all) {
						t.Fatalf("-sim.only: bad step index %q", f)
					}
					steps = append(steps, all[i])
				}
			}
			o, err := run(steps, options{trace: *flagTrace})
			if err != nil {
				t.Fatal(err)
			}
			if *flagTrace {
				t.Log(strings.Join(o.traces, "\n"))
			}
			for issue, first := range o.open {
				t.Logf("seed %d: open defect (%s), first at %s", seed, issue, first)
			}
			if o.failedAt < 0 {
				t.Logf("seed %d: %d steps, %d port calls, %d faults, %d invariant checks", seed, o.stats.steps, o.stats.calls, o.stats.faults, o.stats.checks)
				return
			}
			if *flagOnly != "" {
				t.Fatalf("seed %d fails after step %d:\n  %s", seed, o.failedAt, strings.Join(o.violations, "\n  "))
			}
			report(t, seed, *flagSteps, o)
		})
	}
}

// TestSimulationForever runs random seeds until -sim.forever passes, Ctrl-C or the first
// failure (go tool task sim).
func TestSimulationForever(t *testing.T) {
	if *flagForever <= 0 {
		t.Skip("set -sim.forever to run random seeds")
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt)
	defer signal.Stop(stop)
	deadline := time.Now().Add(*flagForever)
	started, lastReport := time.Now(), time.Now()
	var total stats
	runs := 0
	openSeen := map[string]int{}
	defer func() {
		for issue, n := range openSeen {
			t.Logf("open defect in %d of %d seeds: %s", n, runs, issue)
		}
	}()
	for time.Now().Before(deadline) {
		select {
		case <-stop:
			t.Logf("stopped after %d seeds", runs)
			return
		default:
		}
		seed := rand.Uint64()
		o, err := run(generate(seed, *flagSteps), options{})
		if err != nil {
			t.Fatal(err)
		}
		runs++
		for issue := range o.open {
			openSeen[issue]++
		}
		total.steps += o.stats.steps
		total.calls += o.stats.calls
		total.faults += o.stats.faults
		total.checks += o.stats.checks
		if o.failedAt >= 0 {
			report(t, seed, *flagSteps, o)
			return
		}
		if time.Since(lastReport) >= 5*time.Second {
			lastReport = time.Now()
			elapsed := time.Since(started).Seconds()
			fmt.Printf("sim: %d seeds, %d steps (%.0f steps/s), %d port calls, %d faults injected, %d invariant checks\n",
				runs, total.steps, float64(total.steps)/elapsed, total.calls, total.faults, total.checks)
		}
	}
	t.Logf("%d seeds, %d steps, %d faults, %d invariant checks: no failure", runs, total.steps, total.faults, total.checks)
}

// TestSimulationIsDeterministic: a seed replays step for step, or a printed failure would not
// reproduce.
func TestSimulationIsDeterministic(t *testing.T) {
	steps := generate(3, 3000)
	first, err := run(steps, options{trace: true, keepGoing: true})
	if err != nil {
		t.Fatal(err)
	}
	second, err := run(steps, options{trace: true, keepGoing: true})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(first.traces, second.traces) || first.stats != second.stats {
		for i := range min(len(first.traces), len(second.traces)) {
			if first.traces[i] != second.traces[i] {
				t.Fatalf("runs of one seed differ at trace line %d:\n%s\n%s", i, first.traces[i], second.traces[i])
			}
		}
		t.Fatalf("runs of one seed differ: %d and %d trace lines, stats %+v and %+v", len(first.traces), len(second.traces), first.stats, second.stats)
	}
}
