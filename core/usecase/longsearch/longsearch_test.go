package longsearch_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/memory"
	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/shard"
	"github.com/imdhq/imd/core/domain/social"
	"github.com/imdhq/imd/core/store/membership"
	"github.com/imdhq/imd/core/usecase/conversation"
	"github.com/imdhq/imd/core/usecase/history"
	"github.com/imdhq/imd/core/usecase/longsearch"
)

const tenant = "t1"

var m0 = month.Month(203101)

type fixture struct {
	t        *testing.T
	editor   *memory.MessageEditor
	store    *memory.MessageStore
	dir      *memory.Directory
	dellog   *memory.DeleteLog
	index    *memory.SearchIndex
	indexer  *longsearch.Indexer
	searcher *longsearch.Searcher
	seqs     map[string]int64
}

// Users 1 and 2 share grp_1; users 1 and 3 share grp_2.
func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	clock := memory.NewClock(m0.Start().Add(24 * time.Hour))
	shards := memory.NewShardStore()
	f := &fixture{t: t, editor: memory.NewMessageEditor(shards), store: memory.NewMessageStore(shards), dir: memory.NewDirectory(), dellog: memory.NewDeleteLog(shards),
		index: memory.NewSearchIndex(), seqs: map[string]int64{}}
	if err := shards.EnsureTable(ctx, tenant, m0); err != nil {
		t.Fatal(err)
	}
	if err := shards.SetState(ctx, tenant, m0, shard.Prepared, shard.Writable); err != nil {
		t.Fatal(err)
	}
	months := memory.NewMonthState(clock.Now)
	if err := months.MarkReady(ctx, tenant, 0, m0); err != nil {
		t.Fatal(err)
	}
	if _, err := months.Advance(ctx, tenant, 0, m0); err != nil {
		t.Fatal(err)
	}
	for id, members := range map[int64][]int64{1: {2}, 2: {3}} {
		if _, err := f.dir.CreateGroup(ctx, tenant, social.Group{ID: id, Owner: 1}, 100+id, members, 0); err != nil {
			t.Fatal(err)
		}
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	resolver := conversation.NewResolver(f.dir, memory.NewIDs(clock), membership.New(f.dir, clock, 0))
	h := history.New(history.Deps{Store: f.store, Routes: memory.NewRouteCache(), Months: months, Metrics: memory.NewMetrics(), Resolver: resolver, Log: log})
	fetch := func(ctx context.Context, tenant, topic string, seq int64) (message.Message, error) {
		return h.Get(ctx, tenant, 0, topic, seq)
	}
	f.indexer = longsearch.NewIndexer(longsearch.IndexerConfig{Flush: time.Millisecond}, f.index, fetch, memory.NewMetrics(), log)
	f.indexer.Start()
	t.Cleanup(f.indexer.Stop)
	f.searcher = longsearch.NewSearcher(longsearch.SearchDeps{Index: f.index, History: h, Resolver: resolver, Groups: f.dir, Hidden: f.dellog})
	return f
}

// post stores a message as the send path does and tells the indexer, like its commit hook.
func (f *fixture) post(topic, kind, content string) message.Message {
	f.t.Helper()
	f.seqs[topic]++
	seq := f.seqs[topic]
	m := message.Message{Topic: topic, Seq: seq, MsgID: int64(topic[len(topic)-1])*1000 + seq, From: 1, ClientMsgID: fmt.Sprint(seq), Type: kind,
		Content: json.RawMessage(content), Status: message.StatusNormal, Version: 1, CreatedAt: m0.Start().Add(time.Duration(len(f.seqs)*100+int(seq)) * time.Minute), Month: m0}
	if _, err := f.store.Append(context.Background(), tenant, m, "h"); err != nil {
		f.t.Fatal(err)
	}
	f.indexer.Committed(context.Background(), tenant, m)
	return m
}

func (f *fixture) text(topic, text string) message.Message {
	b, _ := json.Marshal(map[string]string{"text": text})
	return f.post(topic, "text", string(b))
}

// change edits a stored message in place.
func (f *fixture) change(topic string, seq int64, fn func(*message.Message)) {
	f.t.Helper()
	_, err := f.editor.Modify(context.Background(), tenant, m0, topic, seq, func(cur message.Message) (message.Revision, error) {
		fn(&cur)
		return message.Revision{Action: message.ActionEdit, Message: cur}, nil
	})
	if err != nil {
		f.t.Fatal(err)
	}
}

// search searches as user until the answer is want (the feed is asynchronous) or a second
// passed, and returns the last answer.
func (f *fixture) search(user int64, q string, want ...string) []string {
	f.t.Helper()
	deadline := time.Now().Add(time.Second)
	for {
		res, err := f.searcher.Search(context.Background(), longsearch.Request{Tenant: tenant, User: user, Text: q})
		if err != nil {
			f.t.Fatalf("search %q as %d: %v", q, user, err)
		}
		got := []string{}
		for _, m := range res.Messages {
			got = append(got, fmt.Sprintf("%s/%d", m.Topic, m.Seq))
		}
		if slices.Equal(got, want) || time.Now().After(deadline) {
			return got
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestSearchReturnsOnlyWhatTheUserMayRead(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.text("grp_1", "归档方案 archive plan")
	f.text("grp_2", "私密 归档 archive")
	f.post("grp_1", "file", `{"key":"k/1","name":"归档清单.xlsx","size":10}`)
	f.text("grp_1", "edited soon")

	tests := []struct {
		user int64
		q    string
		want []string
	}{
		{1, "归档", []string{"grp_1/2", "grp_2/1", "grp_1/1"}},
		{2, "归档", []string{"grp_1/2", "grp_1/1"}},
		{3, "ARCHIVE", []string{"grp_2/1"}},
		{9, "归档", nil},
	}
	for _, tc := range tests {
		if got := f.search(tc.user, tc.q, tc.want...); !slices.Equal(got, tc.want) {
			t.Errorf("user %d %q: %v, want %v", tc.user, tc.q, got, tc.want)
		}
	}

	// Deleted for oneself: hidden for that user only.
	if err := f.dellog.HideRange(ctx, tenant, "grp_1", 2, 1, 2); err != nil {
		t.Fatal(err)
	}
	if got := f.search(2, "归档", "grp_1/2"); !slices.Equal(got, []string{"grp_1/2"}) {
		t.Errorf("after user 2 deleted seq 1: %v", got)
	}
	// Recalled: the event removes it (the status check would hide it anyway).
	f.change("grp_1", 2, func(m *message.Message) { m.Status, m.Content = message.StatusRecalled, nil })
	f.post("grp_1", "system", `{"event":"recall","seq":2}`)
	if got := f.search(1, "清单"); len(got) != 0 {
		t.Errorf("a recalled file is still found: %v", got)
	}
	// Edited: the event makes the indexer read the message again.
	f.change("grp_1", 3, func(m *message.Message) { m.Content, m.Version = json.RawMessage(`{"text":"now about budgets"}`), 2 })
	f.post("grp_1", "system", `{"event":"edit","seq":3,"version":2}`)
	if got := f.search(1, "budgets", "grp_1/3"); !slices.Equal(got, []string{"grp_1/3"}) {
		t.Errorf("the edited text: %v", got)
	}
	if got := f.search(1, "edited"); len(got) != 0 {
		t.Errorf("the text before the edit: %v", got)
	}
	// Left the group: the index still names grp_1, but the re-check refuses it.
	if err := f.dir.RemoveMembers(ctx, tenant, 1, []int64{2}, 0); err != nil {
		t.Fatal(err)
	}
	if got := f.search(2, "归档"); len(got) != 0 {
		t.Errorf("after leaving: %v", got)
	}
	if _, err := f.searcher.Search(ctx, longsearch.Request{Tenant: tenant, User: 2, Topic: "grp_1", Text: "x"}); apperr.CodeOf(err) != apperr.Forbidden {
		t.Errorf("searching a topic of another group: %v", err)
	}
}
