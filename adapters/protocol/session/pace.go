package session

import (
	"context"
	"time"
)

// loopChunk bounds the connections whose writes one push hands an event loop before it waits
// for that loop to have run them. A gnet loop runs every queued write of a loop before it reads
// again, so a push to a big group (a write per member) handed over at once keeps the loop
// from reading for as long as the writes take: the sender's next request, its SEND_ACK and
// every other client of that loop wait behind them (at 10,000 members, seconds). With the
// bound the loop reads between chunks. Pushes to fewer connections are not held up at all.
const loopChunk = 128

// chunkWait bounds the wait for a loop to run a chunk: a loop that stopped (shutdown) must not
// hold the deliver worker; the remaining writes are then queued without waiting.
const chunkWait = 5 * time.Second

// offerPaced offers each queue to its connection, a chunk of connections per event loop at a
// time, and returns how many frames each connection took. Connections without an event loop
// (test links) are offered at once.
func offerPaced(ctx context.Context, queues []connQueue) []int {
	took := make([]int, len(queues))
	var (
		loops   []Loop
		pending = make(map[Loop][]int) // indexes into queues, in order
	)
	for i := range queues {
		l := queues[i].conn.link.Loop()
		if l == nil {
			took[i] = queues[i].conn.offer(queues[i].bufs)
			continue
		}
		if _, seen := pending[l]; !seen {
			loops = append(loops, l)
		}
		pending[l] = append(pending[l], i)
	}
	for len(loops) > 0 {
		var ran []chan struct{}
		left := loops[:0]
		for _, l := range loops {
			idx := pending[l]
			n := min(len(idx), loopChunk)
			for _, i := range idx[:n] {
				took[i] = queues[i].conn.offer(queues[i].bufs)
			}
			if pending[l] = idx[n:]; len(pending[l]) == 0 {
				continue
			}
			left = append(left, l)
			// Queued after the chunk's writes, so it runs once they have.
			done := make(chan struct{})
			if err := l.Run(ctx, func() { close(done) }); err == nil {
				ran = append(ran, done)
			}
		}
		loops = left
		waitAll(ctx, ran)
	}
	return took
}

// waitAll waits until every channel is closed, ctx ends or chunkWait passes.
func waitAll(ctx context.Context, chans []chan struct{}) {
	if len(chans) == 0 {
		return
	}
	t := time.NewTimer(chunkWait)
	defer t.Stop()
	for _, ch := range chans {
		select {
		case <-ch:
		case <-ctx.Done():
			return
		case <-t.C:
			return
		}
	}
}
