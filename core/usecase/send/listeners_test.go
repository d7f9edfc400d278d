package send_test

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/memory"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/store/membership"
	"github.com/imdhq/imd/core/usecase/conversation"
	"github.com/imdhq/imd/core/usecase/send"
	"github.com/imdhq/imd/ports"
)

// heard records what a commit listener was told.
type heard struct {
	mu   sync.Mutex
	seqs []int64
}

func (h *heard) Committed(_ context.Context, _ string, m message.Message) {
	h.mu.Lock()
	h.seqs = append(h.seqs, m.Seq)
	h.mu.Unlock()
}

// TestListenersHearStoredMessagesAfterCommit: every acknowledged message reaches the
// listeners (the search and file indexes) once it is stored and queued; a refused send or one
// that failed after COMMIT, before its ACK, reaches none.
func TestListenersHearStoredMessagesAfterCommit(t *testing.T) {
	f := newFixture(t)
	h := &heard{}
	ids := memory.NewIDs(f.clock)
	f.svc = send.New(send.Config{MsgIDWindow: 5 * time.Minute}, send.Deps{
		Seq: f.seqs, Store: f.store, FollowUp: f.followUp(memory.NewRouteCache(), nil), IDs: ids, Clock: f.clock,
		Metrics: f.metrics, Resolver: conversation.NewResolver(f.dir, ids, membership.New(f.dir, f.clock, time.Second)),
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Months: f.manager,
		Listeners: []ports.CommitListener{h},
	})
	to := conversation.Address{Topic: f.group}
	steps := []struct {
		from     int64
		clientID string
		down     bool
		ok       bool
	}{
		{1, "a", false, true},
		{3, "b", false, false}, // not a member: refused before anything is written
		{1, "c", true, false},  // stored, but the deliver queue is down: no ACK
		{1, "c", false, true},  // its retry is acknowledged
		{1, "a", false, true},  // a retry of an acknowledged message
	}
	for _, s := range steps {
		f.queue.setDown(s.down)
		if _, err := f.send(s.from, to, s.clientID, "hello"); (err == nil) != s.ok {
			t.Fatalf("send %s: %v", s.clientID, err)
		}
	}
	if got := h.seqs; len(got) != 3 || got[0] != 1 || got[1] != 2 || got[2] != 1 {
		t.Fatalf("listeners heard seqs %v, want [1 2 1]", got)
	}
}
