package longsearch_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/memory"
	"github.com/imdhq/imd/core/domain/fulltext"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/usecase/longsearch"
	"github.com/imdhq/imd/ports"
)

// gatedIndex records each write's start and end, and holds every write open until release
// says, so a test sees which writes ran at once.
type gatedIndex struct {
	ports.SearchIndex
	mu      sync.Mutex
	events  []string
	open    int
	maxOpen int
	started chan string
	release chan struct{}
}

func (g *gatedIndex) enter(name string) {
	g.mu.Lock()
	g.events = append(g.events, "start "+name)
	g.open++
	g.maxOpen = max(g.maxOpen, g.open)
	g.mu.Unlock()
	g.started <- name
	<-g.release
	g.mu.Lock()
	g.events = append(g.events, "end "+name)
	g.open--
	g.mu.Unlock()
}

func (g *gatedIndex) Index(_ context.Context, _ string, docs []fulltext.Doc) error {
	g.enter(fmt.Sprintf("index %s/%d", docs[0].Topic, docs[0].Seq))
	return nil
}

func (g *gatedIndex) Remove(_ context.Context, _ string, keys []fulltext.Key) error {
	g.enter(fmt.Sprintf("remove %s/%d", keys[0].Topic, keys[0].Seq))
	return nil
}

// TestIndexerWritesFullBatchesAtOnceInQueueOrder (issue 30 part 3): full batches of additions
// are written by several writers at once; a batch that removes waits for the additions queued
// before it and holds back those queued after it, so the index ends in the queue's order.
func TestIndexerWritesFullBatchesAtOnceInQueueOrder(t *testing.T) {
	g := &gatedIndex{started: make(chan string, 16), release: make(chan struct{})}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	x := longsearch.NewIndexer(longsearch.IndexerConfig{Batch: 2, Flush: time.Hour, Writers: 3}, g, nil, memory.NewMetrics(), log)
	x.Start()
	ctx := context.Background()
	post := func(topic string, seq int64, kind, content string) {
		x.Committed(ctx, tenant, message.Message{Topic: topic, Seq: seq, MsgID: seq, Type: kind, Content: json.RawMessage(content), Status: message.StatusNormal})
	}
	text := func(topic string, seq int64) { post(topic, seq, "text", `{"text":"hello"}`) }
	awaitStart := func(want string) {
		t.Helper()
		select {
		case got := <-g.started:
			if got != want {
				t.Fatalf("write %q started, want %q", got, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("write %q did not start", want)
		}
	}
	noStart := func(why string) {
		t.Helper()
		select {
		case got := <-g.started:
			t.Fatalf("write %q started while %s", got, why)
		case <-time.After(50 * time.Millisecond):
		}
	}

	text("grp_1", 1)
	text("grp_1", 2)
	awaitStart("index grp_1/1")
	text("grp_2", 1)
	text("grp_2", 2)
	awaitStart("index grp_2/1") // with the first still open: two writers at once
	post("grp_1", 3, "system", `{"event":"recall","seq":1}`)
	text("grp_1", 4)
	noStart("the additions before the recall are open")
	text("grp_3", 1)
	text("grp_3", 2)
	noStart("a removal queued before it waits")
	g.release <- struct{}{}
	g.release <- struct{}{}
	awaitStart("index grp_1/4") // the recall's batch: its additions first, then the removal
	g.release <- struct{}{}
	awaitStart("remove grp_1/1")
	noStart("the removal is open")
	g.release <- struct{}{}
	awaitStart("index grp_3/1")
	g.release <- struct{}{}
	x.Stop()

	want := []string{"start index grp_1/1", "start index grp_2/1", "end", "end", "start index grp_1/4", "end index grp_1/4",
		"start remove grp_1/1", "end remove grp_1/1", "start index grp_3/1", "end index grp_3/1"}
	if len(g.events) != len(want) {
		t.Fatalf("writes %q, want %q", g.events, want)
	}
	for i, w := range want {
		if w != "end" && g.events[i] != w || w == "end" && g.events[i][:3] != "end" {
			t.Fatalf("write %d: %q in %q, want %q", i, g.events[i], g.events, w)
		}
	}
	if g.maxOpen != 2 {
		t.Fatalf("at most %d writes at once, want 2", g.maxOpen)
	}
}
