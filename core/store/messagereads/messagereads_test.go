package messagereads_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/memory"
	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/shard"
	"github.com/imdhq/imd/core/store/archivereader"
	"github.com/imdhq/imd/core/store/messagereads"
	"github.com/imdhq/imd/ports"
)

const (
	tenant = "t1"
	topic  = "grp_10"
)

var (
	live     = month.Month(203103) // has a table; the legacy message was created in it
	archived = month.Month(203102) // archived in the catalog
)

// world is the month tables, a legacy table holding one message of the live month (after
// the cutover, so a change may copy it) and a catalog with one archived month.
type world struct {
	store  *memory.MessageStore
	editor *memory.MessageEditor
	legacy *memory.Legacy
	deps   messagereads.Deps
	old    message.Message
}

func newWorld(t *testing.T) *world {
	t.Helper()
	ctx := context.Background()
	clock := memory.NewClock(live.Start().Add(20 * 24 * time.Hour))
	shards := memory.NewShardStore()
	w := &world{store: memory.NewMessageStore(shards), editor: memory.NewMessageEditor(shards), legacy: memory.NewLegacy(shards, clock.Now)}
	for _, m := range []month.Month{archived, live} {
		if err := shards.EnsureTable(ctx, tenant, m); err != nil {
			t.Fatal(err)
		}
	}
	steps := []shard.State{shard.Prepared, shard.Writable, shard.Sealing, shard.Sealed, shard.Archived}
	for i := 1; i < len(steps); i++ {
		if err := shards.SetState(ctx, tenant, archived, steps[i-1], steps[i]); err != nil {
			t.Fatal(err)
		}
	}
	w.old = message.Message{
		Topic: topic, GroupID: 10, ConversationID: 500, Seq: 1, MsgID: 1001, From: 1, ClientMsgID: "l1", Type: "text",
		Content: json.RawMessage(`{"text":"legacy"}`), Status: message.StatusNormal, Version: 1,
		CreatedAt: live.Start().Add(time.Hour), Month: live,
	}
	w.legacy.Load(tenant, []message.Message{w.old})
	if _, err := w.legacy.Cutover(ctx, tenant); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	caches := archivereader.Config{}
	w.deps = messagereads.Deps{
		Store: w.store, Search: w.store, Finder: w.store, Editor: w.editor,
		Legacy: w.legacy, Copier: w.legacy, Clock: clock,
		Archive: archivereader.NewReader(caches, memory.NewBlobStore(), memory.NewDeleteLog(shards), memory.NewMetrics()),
		States:  archivereader.NewStates(caches, shards, clock),
		Log:     log,
	}
	return w
}

// found reads a lookup's answer: the message, or none when the store has not got it.
func found(t *testing.T, what string, m message.Message, err error) bool {
	t.Helper()
	if errors.Is(err, message.ErrNotFound) || apperr.CodeOf(err) == apperr.NotFound {
		return false
	}
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return m.MsgID != 0
}

func TestNew(t *testing.T) {
	tests := []struct {
		name     string
		dualRead bool
		// wantLegacy: every read, history's archive-aware one included, sees the legacy message,
		// and a change copies it into its month table first.
		wantLegacy bool
	}{
		{name: "dual read off: the month tables' own ports", dualRead: false, wantLegacy: false},
		{name: "dual read on: the legacy table merged in", dualRead: true, wantLegacy: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			w := newWorld(t)
			r := messagereads.New(messagereads.Config{DualRead: tc.dualRead, StatusTTL: time.Nanosecond}, w.deps)

			raw := map[string]bool{
				"Store":  r.Store == ports.MessageStore(w.store),
				"Search": r.Search == ports.MessageSearch(w.store),
				"Finder": r.Finder == ports.MessageFinder(w.store),
			}
			for port, same := range raw {
				if same == tc.dualRead {
					t.Errorf("%s is the month tables' own port: %v; want %v", port, same, !tc.dualRead)
				}
			}

			m, err := r.Store.Get(ctx, tenant, live, topic, w.old.Seq)
			if got := found(t, "Store.Get", m, err); got != tc.wantLegacy {
				t.Errorf("Store.Get found the legacy message: %v; want %v", got, tc.wantLegacy)
			}
			m, err = r.Finder.FindByID(ctx, tenant, live, w.old.MsgID)
			if got := found(t, "Finder.FindByID", m, err); got != tc.wantLegacy {
				t.Errorf("Finder.FindByID found the legacy message: %v; want %v", got, tc.wantLegacy)
			}
			query := ports.SearchQuery{Topic: topic, Text: "legacy", From: live.Start(), To: live.Next().Start(), Limit: 10}
			hits, err := r.Search.Search(ctx, tenant, live, query)
			if err != nil {
				t.Fatalf("Search: %v", err)
			}
			if got := len(hits) == 1; got != tc.wantLegacy {
				t.Errorf("Search found %d messages; want the legacy one: %v", len(hits), tc.wantLegacy)
			}
			// Archived is the archive in front of the same chain, not of the raw tables.
			m, err = r.Archived.Get(ctx, tenant, live, topic, w.old.Seq)
			if got := found(t, "Archived.Get", m, err); got != tc.wantLegacy {
				t.Errorf("Archived.Get found the legacy message: %v; want %v", got, tc.wantLegacy)
			}
			hits, err = r.Archived.Search(ctx, tenant, live, query)
			if err != nil {
				t.Fatalf("Archived.Search: %v", err)
			}
			if got := len(hits) == 1; got != tc.wantLegacy {
				t.Errorf("Archived.Search found %d messages; want the legacy one: %v", len(hits), tc.wantLegacy)
			}

			recall := func(cur message.Message) (message.Revision, error) {
				cur.Status, cur.Content, cur.Version = message.StatusRecalled, nil, cur.Version+1
				return message.Revision{Action: message.ActionRecall, Editor: cur.From, At: cur.CreatedAt, Message: cur}, nil
			}
			m, err = r.Editor.Modify(ctx, tenant, live, topic, w.old.Seq, recall)
			if got := found(t, "Editor.Modify", m, err); got != tc.wantLegacy {
				t.Errorf("Editor.Modify changed the legacy message: %v; want %v", got, tc.wantLegacy)
			}
			if tc.wantLegacy {
				copied, err := w.store.Get(ctx, tenant, live, topic, w.old.Seq)
				if err != nil || copied.Status != message.StatusRecalled {
					t.Errorf("month table after the change: %+v, %v; want the copied message recalled", copied, err)
				}
			}
			// The archive wrap is outermost: an archived month refuses changes either way.
			_, err = r.Editor.Modify(ctx, tenant, archived, topic, w.old.Seq, recall)
			if apperr.CodeOf(err) != apperr.Conflict {
				t.Errorf("Editor.Modify in an archived month: %v; want a conflict", err)
			}
		})
	}
}
