package groupfiles_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/memory"
	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/social"
	"github.com/imdhq/imd/core/store/membership"
	"github.com/imdhq/imd/core/usecase/conversation"
	"github.com/imdhq/imd/core/usecase/groupfiles"
)

const tenant = "t1"

func TestFilesAreIndexedAfterCommitAndListedForMembers(t *testing.T) {
	ctx := context.Background()
	clock := memory.NewClock(time.Date(2031, 1, 2, 0, 0, 0, 0, time.UTC))
	shards, dir := memory.NewShardStore(), memory.NewDirectory()
	if _, err := dir.CreateGroup(ctx, tenant, social.Group{ID: 1, Owner: 1}, 100, []int64{2}, 0); err != nil {
		t.Fatal(err)
	}
	dellog := memory.NewDeleteLog(shards)
	svc := groupfiles.New(groupfiles.Deps{
		Files: memory.NewReferences(), Resolver: conversation.NewResolver(dir, memory.NewIDs(clock), membership.New(dir, clock, 0)),
		Hidden: dellog, Metrics: memory.NewMetrics(), Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	msg := func(seq int64, kind, content string) message.Message {
		return message.Message{Topic: "grp_1", Seq: seq, MsgID: seq, From: 1, Type: kind, Content: json.RawMessage(content),
			Status: message.StatusNormal, CreatedAt: clock.Now()}
	}
	for _, m := range []message.Message{
		msg(1, "file", `{"key":"k/a.pdf","name":"a.pdf","size":10}`),
		msg(2, "text", `{"text":"no file"}`),
		msg(3, "file", `{"key":"k/b.zip","size":20}`),
		msg(4, "file", `{"key":"k/c.txt","name":"c.txt"}`),
		msg(5, "system", `{"event":"recall","seq":4}`),
		msg(6, "file", `{"key":"k/d.png","name":"d.png"}`),
	} {
		svc.Committed(ctx, tenant, m)
	}
	names := func(user, before int64, limit int) ([]string, int64, error) {
		files, next, err := svc.List(ctx, tenant, user, 1, before, limit)
		var out []string
		for _, f := range files {
			out = append(out, f.Name)
		}
		return out, next, err
	}
	got, next, err := names(2, 0, 2)
	if err != nil || !slices.Equal(got, []string{"d.png", "b.zip"}) || next != 3 {
		t.Fatalf("first page: %v next %d %v", got, next, err)
	}
	got, next, err = names(2, next, 2)
	if err != nil || !slices.Equal(got, []string{"a.pdf"}) || next != 0 {
		t.Fatalf("second page: %v next %d %v", got, next, err)
	}
	if err := dellog.HideRange(ctx, tenant, "grp_1", 2, 3, 4); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := names(2, 0, 10); !slices.Equal(got, []string{"d.png", "a.pdf"}) {
		t.Fatalf("after deleting seq 3 for themself: %v", got)
	}
	if _, _, err := names(3, 0, 10); apperr.CodeOf(err) != apperr.Forbidden {
		t.Fatalf("a non-member lists the files: %v", err)
	}
}
