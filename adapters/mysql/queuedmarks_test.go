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
	marker *marker
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
	insertMembers(t, td, deliveredConv(testMessage("grp_1", 1, 0)), 8) // the sender of testMessage is 7
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

// markKind is one kind of mark a marker writes, made for a message m.
type markKind struct {
	name string
	// start begins the mark of m.
	start func(f *stalledWriter, m message.Message) error
	// waiting is the marks of the kind that wait for a transaction (marker.mu held).
	waiting func(m *marker) int
	// kept reports whether the mark of m is in the database.
	kept func(t *testing.T, f *stalledWriter, m message.Message) bool
	// stuckCarries: the stuck batch waits before the point where it carries marks of the kind,
	// so once released it carries one that still waits, where another kind's goes alone.
	stuckCarries bool
}

// markKinds: the queued flag of m's dedup record, and the delivered mark of m's sender in the
// conversation deliveredConv(m), whose member row exists only for seq 1.
var markKinds = []markKind{
	{
		name: "queued",
		start: func(f *stalledWriter, m message.Message) error {
			return f.s.MarkQueued(context.Background(), f.tenant, m.Topic, m.From, m.ClientMsgID)
		},
		waiting: func(m *marker) int { return len(m.queued.waiting) },
		kept: func(t *testing.T, f *stalledWriter, m message.Message) bool {
			return dedupStatus(t, f.db, m) == dedupQueued
		},
	},
	{
		name: "delivered",
		start: func(f *stalledWriter, m message.Message) error {
			return f.s.raiseDelivered(context.Background(), f.tenant, deliveredMark{conversationID: deliveredConv(m), user: m.From, seq: m.Seq})
		},
		waiting:      func(m *marker) int { return len(m.delivered.waiting) },
		stuckCarries: true, // delivered marks go after the mirror rows it waits for
		kept: func(t *testing.T, f *stalledWriter, m message.Message) bool {
			var seq int64
			err := f.db.QueryRow("SELECT delivered_seq FROM t_conversation_members WHERE conversation_id = ? AND user_id = ?", deliveredConv(m), m.From).Scan(&seq)
			if errors.Is(err, sql.ErrNoRows) {
				return false
			}
			if err != nil {
				t.Fatal(err)
			}
			return seq == m.Seq
		},
	},
}

// deliveredConv is the conversation of the delivered mark of m.
func deliveredConv(m message.Message) int64 { return 600 + m.Seq }

// mark starts a mark of kind k and returns once it waits for a transaction.
func (f *stalledWriter) mark(t *testing.T, k markKind, m message.Message) chan error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- k.start(f, m) }()
	waitFor(t, "the mark to wait", func() bool {
		f.marker.mu.Lock()
		defer f.marker.mu.Unlock()
		return k.waiting(f.marker) > 0
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

// appendTakenSeq sends a batch that fails: its message takes a seq the store holds.
func appendTakenSeq(t *testing.T, f *stalledWriter) {
	_, err := f.s.Append(context.Background(), f.tenant, testMessage("grp_1", 1, 102), "h")
	if !errors.Is(err, seq.ErrTaken) {
		t.Fatalf("append of a taken seq: %v, want seq.ErrTaken", err)
	}
}

// TestMarkWaitingForABatch: a mark of either kind that arrives while a batch runs is written
// by the next batch transaction, or alone once no batch is left, and answered only after a
// COMMIT that holds it.
func TestMarkWaitingForABatch(t *testing.T) {
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
		// kept: the mark is in the database once answered.
		kept bool
		// only: the one kind the case is for, "" for both.
		only string
	}{
		{
			name: "rides the next batch",
			mark: stored,
			meanwhile: func(t *testing.T, f *stalledWriter) {
				mustStore(t, f.s, f.tenant, testMessage("grp_2", 1, 201))
			},
			beforeRelease: true, kept: true,
		},
		{
			name: "a resend in the same batch sees it",
			only: "queued",
			mark: stored,
			meanwhile: func(t *testing.T, f *stalledWriter) {
				res, err := f.s.Append(context.Background(), f.tenant, stored, "h-"+stored.ClientMsgID)
				if err != nil || res.Outcome != ports.AlreadyStored || !res.Queued {
					t.Fatalf("resend: outcome %d, queued %v, err %v; want AlreadyStored, queued", res.Outcome, res.Queued, err)
				}
			},
			beforeRelease: true, kept: true,
		},
		{
			name: "a missing record is no error",
			mark: testMessage("grp_1", 9, 109),
			meanwhile: func(t *testing.T, f *stalledWriter) {
				mustStore(t, f.s, f.tenant, testMessage("grp_2", 1, 201))
			},
			beforeRelease: true, kept: false,
		},
		{
			name:          "a rolled-back batch leaves it to a transaction of its own",
			only:          "queued", // carried before the batch's own statements
			mark:          stored,
			meanwhile:     appendTakenSeq,
			beforeRelease: true, alone: 1, kept: true,
		},
		{
			name:      "a batch that fails before the marks leaves it waiting",
			only:      "delivered", // carried after the batch's own statements
			mark:      stored,
			meanwhile: appendTakenSeq,
			alone:     1, kept: true,
		},
		{
			name:      "with no batch coming it goes alone after the running one",
			mark:      stored,
			meanwhile: func(*testing.T, *stalledWriter) {},
			alone:     1, kept: true,
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
			alone: 1, kept: true,
		},
	}
	for _, k := range markKinds {
		for _, tt := range tests {
			if tt.only != "" && tt.only != k.name {
				continue
			}
			t.Run(k.name+"/"+tt.name, func(t *testing.T) {
				f := stallWriter(t)
				mustStore(t, f.s, f.tenant, stored)
				before := f.s.Stats().MarkTransactions
				done := f.mark(t, k, tt.mark)
				tt.meanwhile(t, f)
				ok, err := answered(done, 200*time.Millisecond)
				if ok != tt.beforeRelease {
					t.Fatalf("answered before the stuck batch ended: %v, want %v", ok, tt.beforeRelease)
				}
				if !ok {
					if k.kept(t, f, tt.mark) {
						t.Fatal("kept before the mark was answered")
					}
					f.release()
					if ok, err = answered(done, 10*time.Second); !ok {
						t.Fatal("mark not answered after the stuck batch ended")
					}
				}
				if err != nil {
					t.Fatalf("mark: %v", err)
				}
				if got := k.kept(t, f, tt.mark); got != tt.kept {
					t.Fatalf("kept %v once the mark was answered, want %v", got, tt.kept)
				}
				alone := tt.alone
				if k.stuckCarries && !tt.beforeRelease {
					alone = 0
				}
				if got := f.s.Stats().MarkTransactions - before; got != alone {
					t.Fatalf("%d mark transactions of their own, want %d", got, alone)
				}
				f.release()
				if err := <-f.stalled; err != nil {
					t.Fatalf("stuck append: %v", err)
				}
			})
		}
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

// TestMarksWithConcurrentSends: senders on shared topics store, mark and resend as the send
// path does, and raise a delivered mark in a conversation of the topic as its acks do, so marks
// meet inserts, resends' locking reads and each other in concurrent batches; none may fail or
// be lost, every resend after a mark sees it, and each member row ends at its highest mark.
func TestMarksWithConcurrentSends(t *testing.T) {
	const senders, perSender, topics = 16, 40, 4
	s, c, tenant := newTestStore(t, MessageStoreOptions{})
	ctx := context.Background()
	td, err := c.tenant(tenant)
	if err != nil {
		t.Fatal(err)
	}
	for tp := range topics {
		insertMembers(t, td, int64(700+tp), 100+senders)
	}
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
				if err := s.raiseDelivered(ctx, tenant, deliveredMark{conversationID: int64(700 + tp), user: m.From, seq: m.Seq}); err != nil {
					errs <- fmt.Errorf("delivered mark of %s seq %d: %w", m.Topic, m.Seq, err)
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
	highest := map[[2]int64]int64{}
	for _, m := range sent {
		if got := dedupStatus(t, db, m); got != dedupQueued {
			t.Errorf("%s seq %d: status %q, want %q", m.Topic, m.Seq, got, dedupQueued)
		}
		var tp int64
		fmt.Sscanf(m.Topic, "grp_%d", &tp)
		k := [2]int64{700 + tp, m.From}
		highest[k] = max(highest[k], m.Seq)
	}
	for k, want := range highest {
		var got int64
		if err := db.QueryRow("SELECT delivered_seq FROM t_conversation_members WHERE conversation_id = ? AND user_id = ?", k[0], k[1]).Scan(&got); err != nil || got != want {
			t.Errorf("member %d of %d delivered %d, %v; want %d", k[1], k[0], got, err, want)
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
