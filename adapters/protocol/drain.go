package protocol

import (
	"context"
	"math/rand/v2"
	"time"
)

// drainTick is the pace of a drain: one small batch of connections per tick.
const drainTick = 50 * time.Millisecond

// Drain tells a stopping node's clients to reconnect in small random batches spread over
// window, so the nodes that stay take the reconnects spread out instead of all at once (issue
// 33, docs/NODES.md "Rolling restarts"). open lists the connections still open; it is asked
// again before each batch, so one that arrived meanwhile is drained too, and one already told
// is not told twice. tell sends one the KICK and closes it. A window of 0 tells every
// connection at once. Drain returns when every connection it saw was told, or when ctx ends.
func Drain[C comparable](ctx context.Context, window time.Duration, open func() []C, tell func(C)) {
	told := map[C]bool{}
	batches := max(1, int(window/drainTick))
	tick := time.NewTicker(max(window/time.Duration(batches), time.Millisecond))
	defer tick.Stop()
	for batch := 1; ; batch++ {
		var waiting []C
		for _, c := range open() {
			if !told[c] {
				waiting = append(waiting, c)
			}
		}
		rand.Shuffle(len(waiting), func(i, j int) { waiting[i], waiting[j] = waiting[j], waiting[i] })
		// By batch i of n, i/n of every connection seen is told (rounded up, so the last
		// batch leaves nobody behind): an even pace, not the first batches taking one each
		// until nobody is left.
		seen := len(told) + len(waiting)
		due := (seen*batch+batches-1)/batches - len(told)
		for _, c := range waiting[:min(max(due, 0), len(waiting))] {
			told[c] = true
			tell(c)
		}
		if batch == batches {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
