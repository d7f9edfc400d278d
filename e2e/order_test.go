package e2e

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/imdhq/imd/clients/go/client"
	"github.com/imdhq/imd/clients/go/wire"
)

// TestGroupMessagesReachEveryMemberInSeqOrder sends into one group from many senders at once,
// several sends in flight each, so group commits batch them and their deliver jobs are queued
// in no particular order. Every member must still get every message it did not send exactly
// once, in strictly ascending seq.
func TestGroupMessagesReachEveryMemberInSeqOrder(t *testing.T) {
	srv := Start(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const (
		senders   = 10
		listeners = 3
		inFlight  = 3  // concurrent sends per sender
		perLane   = 10 // sends per lane
	)
	users := make([]int64, senders+listeners)
	conns := make([]*client.Conn, len(users))
	for i := range users {
		users[i] = 9101 + int64(i)
		conns[i] = srv.Connect(ctx, srv.User(users[i]), 1)
	}
	topic := srv.Group(91, users[0], users[1:]...)

	var (
		mu    sync.Mutex
		acked = map[int64]int{} // seq → index of its sender
	)
	var wg sync.WaitGroup
	for s := range senders {
		for lane := range inFlight {
			wg.Go(func() {
				for n := range perLane {
					req := textMessage(topic, fmt.Sprintf("o-%d-%d-%d", s, lane, n), "in order, please")
					ack, err := conns[s].Send(ctx, req)
					if err != nil {
						t.Errorf("sender %d: %v", s, err)
						return
					}
					mu.Lock()
					acked[ack.Seq] = s
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	if len(acked) != senders*inFlight*perLane {
		t.Fatalf("%d distinct seqs ACKed; want %d", len(acked), senders*inFlight*perLane)
	}

	for i, c := range conns {
		var want []int64
		for seq, sender := range acked {
			if sender != i {
				want = append(want, seq)
			}
		}
		slices.Sort(want)
		got := seqsInArrivalOrder(t, c, len(want), 30*time.Second)
		for j := 1; j < len(got); j++ {
			if got[j] <= got[j-1] {
				t.Fatalf("member %d got seq %d after seq %d (arrival order %v)", users[i], got[j], got[j-1], got)
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("member %d got seqs %v; want %v", users[i], got, want)
		}
	}
}

// seqsInArrivalOrder reads MESSAGE pushes until want arrived or limit passed, then a little
// longer so a duplicate would show, and returns their seqs as they came.
func seqsInArrivalOrder(t *testing.T, c *client.Conn, want int, limit time.Duration) []int64 {
	t.Helper()
	var got []int64
	deadline := time.After(limit)
	for len(got) < want {
		select {
		case p := <-c.Pushes():
			if p.Command == wire.CmdMessage && p.Message != nil {
				got = append(got, p.Message.Seq)
			}
		case <-deadline:
			t.Fatalf("received %d of %d messages", len(got), want)
		}
	}
	settle := time.After(300 * time.Millisecond)
	for {
		select {
		case p := <-c.Pushes():
			if p.Command == wire.CmdMessage && p.Message != nil {
				got = append(got, p.Message.Seq)
			}
		case <-settle:
			return got
		}
	}
}
