package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/seq"
	"github.com/imdhq/imd/ports"
)

// stalledWriter is a store whose writer has one batch stuck on a mirror row another
// transaction holds, so a mark has a batch running when it arrives.
type stalledWriter struct {
	s      *MessageStore
	tenant string
	db     *sql.DB
	lock   *sql.Tx
	marker *queuedMarker
	// stalled answers the stuck batch's append.
	stalled chan error
}

func stallWriter(t *testing.T) *stalledWriter {
	t.Helper()
	s, c, tenant := newTestStore(t, MessageStoreOptions{})
	ctx := context.Background()
	mustStore(t, s, tenant, testMessage("stall", 1, 1))
	f := &stalledWriter{s: s, tenant: tenant, db: rawDB(t, c, tenant), stalled: make(chan error, 1)}
	td, err := c.tenant(tenant)
	if err != nil {
		t.Fatal(err)
	}
	f.marker = s.marker(tenant, td)
	// READ COMMITTED: the row only, not the gaps other topics insert into.
	if f.lock, err = f.db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.release)
	if _, err := f.lock.ExecContext(ctx, "SELECT topic FROM im_group_message_topic_shards WHERE topic = 'stall' FOR UPDATE"); err != nil {
		t.Fatal(err)
	}
	go func() {
		_, err := s.Append(ctx, tenant, testMessage("stall", 2, 2), "h")
		f.stalled <- err
	}()
	// Past its marks: a batch's only read of the mirror rows (checkOverlap). Not this query
	// itself, whose text holds the pattern too.
	waitFor(t, "the batch to wait for the mirror row", func() bool {
		var n int
		err := f.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM information_schema.PROCESSLIST
			WHERE DB = DATABASE() AND ID <> CONNECTION_ID() AND INFO LIKE '%name: LockTopicShards%'`).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		return n > 0
	})
	return f
}

// release lets the stuck batch commit; releasing again does nothing.
func (f *stalledWriter) release() { f.lock.Rollback() }

// mark starts MarkQueued and returns once the mark waits for a transaction.
func (f *stalledWriter) mark(t *testing.T, m message.Message) chan error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f.s.MarkQueued(context.Background(), f.tenant, m.Topic, m.From, m.ClientMsgID) }()
	waitFor(t, "the mark to wait", func() bool {
		f.marker.mu.Lock()
		defer f.marker.mu.Unlock()
		return len(f.marker.waiting) > 0
	})
	return done
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func mustStore(t *testing.T, s *MessageStore, tenant string, m message.Message) {
	t.Helper()
	if res, err := s.Append(context.Background(), tenant, m, "h-"+m.ClientMsgID); err != nil || res.Outcome != ports.Stored {
		t.Fatalf("append %s seq %d: outcome %d, err %v", m.Topic, m.Seq, res.Outcome, err)
	}
}

// dedupStatus is the status of m's dedup record, "" when there is none.
func dedupStatus(t *testing.T, db *sql.DB, m message.Message) string {
	t.Helper()
	var status string
	err := db.QueryRow("SELECT status FROM im_group_message_dedup WHERE topic = ? AND from_user = ? AND client_msg_id = ?",
		m.Topic, m.From, m.ClientMsgID).Scan(&status)
	if errors.Is(err, sql.ErrNoRows) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return status
}

// answered reports whether done yields within the time, and what.
func answered(done chan error, within time.Duration) (bool, error) {
	select {
	case err := <-done:
		return true, err
	case <-time.After(within):
		return false, nil
	}
}

// TestQueuedMarkWaitingForABatch: a mark that arrives while a batch runs is written by the
// next batch transaction, or alone once no batch is left, and answered only after a COMMIT
// that holds it.
func TestQueuedMarkWaitingForABatch(t *testing.T) {
	stored := testMessage("grp_1", 1, 101)
	tests := []struct {
		name string
		mark message.Message
		// meanwhile runs while the mark waits behind the stuck batch.
		meanwhile func(t *testing.T, f *stalledWriter)
		// beforeRelease: the mark is answered while the stuck batch still waits.
		beforeRelease bool
		// alone: transactions of its own the mark took.
		alone int64
		want  string
	}{
		{
			name: "rides the next batch",
			mark: stored,
			meanwhile: func(t *testing.T, f *stalledWriter) {
				mustStore(t, f.s, f.tenant, testMessage("grp_2", 1, 201))
			},
			beforeRelease: true, want: dedupQueued,
		},
		{
			name: "a resend in the same batch sees it",
			mark: stored,
			meanwhile: func(t *testing.T, f *stalledWriter) {
				res, err := f.s.Append(context.Background(), f.tenant, stored, "h-"+stored.ClientMsgID)
				if err != nil || res.Outcome != ports.AlreadyStored || !res.Queued {
					t.Fatalf("resend: outcome %d, queued %v, err %v; want AlreadyStored, queued", res.Outcome, res.Queued, err)
				}
			},
			beforeRelease: true, want: dedupQueued,
		},
		{
			name: "a missing record is no error",
			mark: testMessage("grp_1", 9, 109),
			meanwhile: func(t *testing.T, f *stalledWriter) {
				mustStore(t, f.s, f.tenant, testMessage("grp_2", 1, 201))
			},
			beforeRelease: true, want: "",
		},
		{
			name: "a rolled-back batch leaves it to a transaction of its own",
			mark: stored,
			meanwhile: func(t *testing.T, f *stalledWriter) {
				_, err := f.s.Append(context.Background(), f.tenant, testMessage("grp_1", 1, 102), "h")
				if !errors.Is(err, seq.ErrTaken) {
					t.Fatalf("append of a taken seq: %v, want seq.ErrTaken", err)
				}
			},
			beforeRelease: true, alone: 1, want: dedupQueued,
		},
		{
			name:      "with no batch coming it goes alone after the running one",
			mark:      stored,
			meanwhile: func(*testing.T, *stalledWriter) {},
			alone:     1, want: dedupQueued,
		},
		{
			name: "Close writes it",
			mark: stored,
			meanwhile: func(t *testing.T, f *stalledWriter) {
				go f.s.Close()
				waitFor(t, "Close to begin", func() bool {
					f.s.sending.RLock()
					defer f.s.sending.RUnlock()
					return f.s.closed
				})
			},
			alone: 1, want: dedupQueued,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := stallWriter(t)
			mustStore(t, f.s, f.tenant, stored)
			before := f.s.Stats().MarkTransactions
			done := f.mark(t, tt.mark)
			tt.meanwhile(t, f)
			ok, err := answered(done, 200*time.Millisecond)
			if ok != tt.beforeRelease {
				t.Fatalf("answered before the stuck batch ended: %v, want %v", ok, tt.beforeRelease)
			}
			if !ok {
				if got := dedupStatus(t, f.db, tt.mark); got != dedupStored {
					t.Fatalf("status %q before the mark was answered, want %q", got, dedupStored)
				}
				f.release()
				if ok, err = answered(done, 10*time.Second); !ok {
					t.Fatal("mark not answered after the stuck batch ended")
				}
			}
			if err != nil {
				t.Fatalf("MarkQueued: %v", err)
			}
			if got := dedupStatus(t, f.db, tt.mark); got != tt.want {
				t.Fatalf("status %q once MarkQueued returned, want %q", got, tt.want)
			}
			if got := f.s.Stats().MarkTransactions - before; got != tt.alone {
				t.Fatalf("%d mark transactions of their own, want %d", got, tt.alone)
			}
			f.release()
			if err := <-f.stalled; err != nil {
				t.Fatalf("stuck append: %v", err)
			}
		})
	}
}

// TestQueuedMarkIdleWriter: with no batch running, a mark is written at once, alone, and a
// resend right after sees it.
func TestQueuedMarkIdleWriter(t *testing.T) {
	s, c, tenant := newTestStore(t, MessageStoreOptions{})
	ctx := context.Background()
	m := testMessage("grp_1", 1, 101)
	mustStore(t, s, tenant, m)
	if err := s.MarkQueued(ctx, tenant, m.Topic, m.From, m.ClientMsgID); err != nil {
		t.Fatalf("MarkQueued: %v", err)
	}
	if got := s.Stats().MarkTransactions; got != 1 {
		t.Fatalf("%d mark transactions, want 1", got)
	}
	if got := dedupStatus(t, rawDB(t, c, tenant), m); got != dedupQueued {
		t.Fatalf("status %q, want %q", got, dedupQueued)
	}
	if res, err := s.Append(ctx, tenant, m, "h-"+m.ClientMsgID); err != nil || !res.Queued {
		t.Fatalf("resend after the mark: queued %v, err %v", res.Queued, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkQueued(ctx, tenant, m.Topic, m.From, m.ClientMsgID); !errors.Is(err, ErrClosed) {
		t.Fatalf("MarkQueued after Close: %v, want ErrClosed", err)
	}
}

// TestQueuedMarksWithConcurrentSends: senders on shared topics store, mark and resend as the
// send path does, so marks meet inserts, resends' locking reads and each other in concurrent
// batches; none may fail or be lost, and every resend after a mark sees it.
func TestQueuedMarksWithConcurrentSends(t *testing.T) {
	const senders, perSender, topics = 16, 40, 4
	s, c, tenant := newTestStore(t, MessageStoreOptions{})
	ctx := context.Background()
	var seqs [topics]atomic.Int64
	var msgIDs atomic.Int64
	var mu sync.Mutex
	var sent []message.Message
	var wg sync.WaitGroup
	errs := make(chan error, senders)
	for sender := range senders {
		wg.Go(func() {
			for i := range perSender {
				tp := (sender + i) % topics
				m := testMessage(fmt.Sprintf("grp_%d", tp), seqs[tp].Add(1), msgIDs.Add(1))
				m.From = int64(100 + sender)
				if err := sendAndMark(ctx, s, tenant, m, i%3 == 0); err != nil {
					errs <- err
					return
				}
				mu.Lock()
				sent = append(sent, m)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	db := rawDB(t, c, tenant)
	for _, m := range sent {
		if got := dedupStatus(t, db, m); got != dedupQueued {
			t.Errorf("%s seq %d: status %q, want %q", m.Topic, m.Seq, got, dedupQueued)
		}
	}
	st := s.Stats()
	t.Logf("%d appends in %d batch transactions, %d mark transactions of their own",
		st.Appends, st.Transactions, st.MarkTransactions)
}

// sendAndMark is the send path's store, enqueue-and-mark, and a client's resend (before the
// mark too, with early).
func sendAndMark(ctx context.Context, s *MessageStore, tenant string, m message.Message, early bool) error {
	hash := "h-" + m.ClientMsgID
	if res, err := s.Append(ctx, tenant, m, hash); err != nil || res.Outcome != ports.Stored {
		return fmt.Errorf("append %s seq %d: outcome %d, err %w", m.Topic, m.Seq, res.Outcome, err)
	}
	if early {
		if res, err := s.Append(ctx, tenant, m, hash); err != nil || res.Outcome != ports.AlreadyStored {
			return fmt.Errorf("resend of %s seq %d before its mark: outcome %d, err %w", m.Topic, m.Seq, res.Outcome, err)
		}
	}
	if err := s.MarkQueued(ctx, tenant, m.Topic, m.From, m.ClientMsgID); err != nil {
		return fmt.Errorf("mark %s seq %d: %w", m.Topic, m.Seq, err)
	}
	res, err := s.Append(ctx, tenant, m, hash)
	if err != nil || res.Outcome != ports.AlreadyStored || !res.Queued {
		return fmt.Errorf("resend of %s seq %d after its mark: outcome %d, queued %v, err %w", m.Topic, m.Seq, res.Outcome, res.Queued, err)
	}
	return nil
}
