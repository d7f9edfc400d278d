package e2e

// Seed 003 §20 item 7 and §23 item 5: the event loop does no MySQL, so its latency does not
// follow MySQL's. The current month's message table is locked from another connection while
// clients send; the sends stall in MySQL, and heartbeats, on the very connections whose sends
// wait, are still answered. After the unlock every send completes, stored once.

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

// stallHeartbeatBound is how long a heartbeat may take while MySQL is stalled: generous
// against a loaded machine, and far below the request timeout a send waiting on the lock runs
// into.
const stallHeartbeatBound = 2 * time.Second

func TestEventLoopAnswersHeartbeatsWhileMySQLStalls(t *testing.T) {
	srv := Start(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const senders, each = 4, 5
	// The last connection sends nothing: it heartbeats beside the stalled ones.
	c := newChat(t, srv, ctx, 20, senders+1, senders+1)

	db := srv.TenantDB()
	lock, err := db.Conn(ctx) // LOCK TABLES holds for this one session
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if _, err := lock.ExecContext(ctx, "LOCK TABLES im_group_messages_"+Month(0)+" WRITE"); err != nil {
		t.Fatal(err)
	}
	locked := true
	var unlockedAt time.Time
	unlock := func() {
		if locked {
			if _, err := lock.ExecContext(context.Background(), "UNLOCK TABLES"); err != nil {
				t.Errorf("unlock: %v", err)
			}
			unlockedAt, locked = time.Now(), false
		}
	}

	type sent struct {
		seq     int64
		ackedAt time.Time
	}
	var (
		mu    sync.Mutex
		acks  []sent
		busy  int
		wg    sync.WaitGroup
		hbErr = make(chan error, senders+1)
	)
	for i, conn := range c.conns[:senders] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range each {
				req := textMessage(c.topic, fmt.Sprintf("stall-%d-%d", i, j), "while MySQL is locked")
				for {
					ack, err := conn.Send(ctx, req)
					if isCode(err, wire.CodeBusy) { // the contract's answer to a stalled store: retry, same client_msg_id
						mu.Lock()
						busy++
						mu.Unlock()
						continue
					}
					if err != nil {
						t.Errorf("sender %d message %d: %v", i, j, err)
						return
					}
					mu.Lock()
					acks = append(acks, sent{ack.Seq, time.Now()})
					mu.Unlock()
					break
				}
			}
		}()
	}

	defer func() { unlock(); wg.Wait() }() // a failing test lets the senders finish first

	// The sends really wait on the lock: MariaDB shows imd's statements waiting for it.
	eventually(t, 30*time.Second, "a send waiting on the locked table", func() bool {
		return countRows(t, db, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE DB = DATABASE() AND STATE LIKE '%lock%' AND ID <> CONNECTION_ID()") > 0
	})

	// For five seconds of the stall, every connection heartbeats four times a second, the
	// senders on the very connections whose sends wait in MySQL.
	probeUntil := time.Now().Add(5 * time.Second)
	var probes sync.WaitGroup
	for _, conn := range c.conns {
		probes.Add(1)
		go func() {
			defer probes.Done()
			hbErr <- heartbeatUntil(ctx, conn, probeUntil)
		}()
	}
	probes.Wait()
	close(hbErr)
	for err := range hbErr {
		if err != nil {
			t.Error(err)
		}
	}
	mu.Lock()
	early := len(acks)
	mu.Unlock()
	if early != 0 {
		t.Errorf("%d sends acknowledged while their table was locked: a SEND_ACK must mean stored", early)
	}
	unlock()

	wg.Wait()
	if t.Failed() {
		return
	}
	seqs := make([]int64, len(acks))
	for i, a := range acks {
		seqs[i] = a.seq
		if a.ackedAt.Before(unlockedAt) {
			t.Errorf("seq %d acknowledged before the unlock", a.seq)
		}
	}
	slices.Sort(seqs)
	if !slices.Equal(seqs, seqRange(1, senders*each)) {
		t.Fatalf("acknowledged seqs %v, want 1..%d", seqs, senders*each)
	}
	if got := srv.SeqsInTable(db, Month(0), c.topic); !slices.Equal(got, seqRange(1, senders*each)) {
		t.Fatalf("stored seqs %v, want 1..%d once each", got, senders*each)
	}
	t.Logf("%d sends answered 50301 during the stall and were retried", busy)
}

// heartbeatUntil heartbeats c every 250 ms until the deadline; it fails when one is not
// answered within stallHeartbeatBound.
func heartbeatUntil(ctx context.Context, c *client.Conn, until time.Time) error {
	for n := 0; time.Now().Before(until); n++ {
		hctx, cancel := context.WithTimeout(ctx, stallHeartbeatBound)
		started := time.Now()
		err := c.Heartbeat(hctx)
		cancel()
		if err != nil {
			return fmt.Errorf("heartbeat %d while MySQL is locked: not answered within %v (%v): the event loop waits on MySQL", n, time.Since(started).Round(time.Millisecond), err)
		}
		time.Sleep(250 * time.Millisecond)
	}
	return nil
}
