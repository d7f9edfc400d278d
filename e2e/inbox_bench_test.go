package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/imdhq/imd/clients/go/client"
	"github.com/imdhq/imd/clients/go/wire"
)

// BenchmarkSyncInbox1000Conversations measures SYNC_INBOX through the real binary for a user
// with 1,000 conversations that each have a new message: the first page (limit 100), the
// whole list (limit 200, five pages), and the whole list right after Redis lost it (the lazy
// rebuild from MySQL included).
func BenchmarkSyncInbox1000Conversations(b *testing.B) {
	// The per-device SYNC_INBOX limit would throttle the loop.
	srv := Start(b, Options{Env: map[string]string{"IMD_RATE_LIMIT_SYNC_INBOX_PER_MINUTE": "1000000"}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	const conversations = 1000
	reader, writer := int64(70_001), int64(70_002)
	tokR, tokW := srv.User(reader), srv.User(writer)
	var topics []string
	for g := range conversations {
		topics = append(topics, srv.Group(int64(7000+g), writer, reader))
	}
	w := srv.Connect(ctx, tokW, 1)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	for i, topic := range topics {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if _, err := w.Send(ctx, textMessage(topic, fmt.Sprint("b-", i), "hi")); err != nil {
				b.Error(err)
			}
		}()
	}
	wg.Wait()
	r := srv.Connect(ctx, tokR, 1)
	rc := srv.Redis()
	for listed := int64(0); listed < conversations; time.Sleep(100 * time.Millisecond) {
		n, err := rc.Do(ctx, rc.B().Zcard().Key(srv.Keys().DialogUnread(reader)).Build()).AsInt64()
		if err != nil || ctx.Err() != nil {
			b.Fatalf("%d of %d conversations listed: %v", n, conversations, errors.Join(err, ctx.Err()))
		}
		listed = n
	}

	b.Run("first page", func(b *testing.B) {
		for b.Loop() {
			// Sends of the same millisecond share a score; a page never splits them, so it
			// may end a little early.
			if n := syncPages(b, ctx, r, 100, 1); n < 50 || n > 100 {
				b.Fatalf("%d dialogs on the first page", n)
			}
		}
	})
	b.Run("all 1000", func(b *testing.B) {
		for b.Loop() {
			if n := syncPages(b, ctx, r, 200, 0); n != conversations {
				b.Fatalf("%d dialogs, want %d", n, conversations)
			}
		}
	})
	b.Run("all 1000 after Redis loss", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			keys := []string{
				srv.Keys().DialogUnread(reader), srv.Keys().DialogRead(reader),
				srv.Keys().DialogUnreadCount(reader), srv.Keys().DialogBuilt(reader),
			}
			if err := rc.Do(ctx, rc.B().Del().Key(keys...).Build()).Error(); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			if n := syncPages(b, ctx, r, 200, 0); n != conversations {
				b.Fatalf("%d dialogs after the rebuild, want %d", n, conversations)
			}
		}
	})
}

// syncPages runs SYNC_INBOX from zero cursors until has_more is false (or maxPages pages when
// not 0) and returns how many dialogs came.
func syncPages(b *testing.B, ctx context.Context, c *client.Conn, limit, maxPages int) int {
	var (
		n      int
		cursor wire.SyncInboxFinish
	)
	for page := 1; ; page++ {
		envs, err := c.RequestStream(ctx, wire.CmdSyncInbox, wire.SyncInboxRequest{MailboxSeq: cursor.MailboxSeq, DialogScore: cursor.DialogScore, Limit: limit})
		if err != nil {
			b.Fatal(err)
		}
		if fin := envs[len(envs)-1]; fin.Code != wire.CodeOK {
			b.Fatalf("SYNC_INBOX: code %d %s", fin.Code, fin.Msg)
		}
		for _, env := range envs[:len(envs)-1] {
			var p wire.SyncInboxPage
			if err := json.Unmarshal(env.Data, &p); err != nil {
				b.Fatal(err)
			}
			n += len(p.Dialogs)
		}
		if err := json.Unmarshal(envs[len(envs)-1].Data, &cursor); err != nil {
			b.Fatal(err)
		}
		if !cursor.HasMore || page == maxPages {
			return n
		}
	}
}
