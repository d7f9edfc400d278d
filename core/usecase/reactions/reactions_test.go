package reactions_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/memory"
	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/msgref"
	"github.com/imdhq/imd/core/domain/shard"
	"github.com/imdhq/imd/core/domain/social"
	"github.com/imdhq/imd/core/loop/shardmanager"
	"github.com/imdhq/imd/core/store/membership"
	"github.com/imdhq/imd/core/usecase/conversation"
	"github.com/imdhq/imd/core/usecase/history"
	"github.com/imdhq/imd/core/usecase/reactions"
	"github.com/imdhq/imd/core/usecase/send"
)

const tenant = "t1"

// Users of the fixture: 1 owns the group, 2 is a member, 3 an admin, 4 an outsider; 1 and 2
// are friends.
const (
	owner    int64 = 1
	member   int64 = 2
	admin    int64 = 3
	outsider int64 = 4
)

var start = time.Date(2026, 9, 30, 23, 0, 0, 0, time.UTC)

type fixture struct {
	clock   *memory.Clock
	dir     *memory.Directory
	resolve *conversation.Resolver
	shards  *memory.ShardStore
	manager *shardmanager.Manager
	metrics *memory.Metrics
	send    *send.Service
	history *history.Service
	svc     *reactions.Service
	group   string
	pair    string
}

func newFixture(t *testing.T, cfg reactions.Config) *fixture {
	t.Helper()
	ctx := context.Background()
	f := &fixture{clock: memory.NewClock(start), metrics: memory.NewMetrics(), shards: memory.NewShardStore()}
	store := memory.NewMessageStore(f.shards)
	months := memory.NewMonthState(f.clock.Now)
	dir := memory.NewDirectory()
	f.dir = dir
	routes := memory.NewRouteCache()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ids := memory.NewIDs(f.clock)
	f.manager = shardmanager.New(shardmanager.Config{SealingDays: 7}, shardmanager.Deps{
		Store: f.shards, Months: months, Metrics: f.metrics, Log: log,
	})
	if err := f.manager.Ensure(ctx, tenant); err != nil {
		t.Fatal(err)
	}
	resolver := conversation.NewResolver(dir, ids, membership.New(dir, f.clock, time.Second), conversation.WithClock(f.clock))
	f.resolve = resolver
	seqs := memory.NewSeqAllocator(months, f.clock.Now)
	f.send = send.New(send.Config{MsgIDWindow: 5 * time.Minute}, send.Deps{
		Seq: seqs, Store: store, FollowUp: &memory.CommitFollowUp{Routes: routes, Queue: memory.NewDeliverQueue(f.clock.Now), Seqs: seqs}, IDs: ids,
		Clock: f.clock, Metrics: f.metrics, Resolver: resolver, Log: log, Months: f.manager,
	})
	f.history = history.New(history.Deps{Store: store, Routes: routes, Months: months, Metrics: f.metrics, Resolver: resolver, Log: log})
	r := memory.NewReactions()
	f.svc = reactions.New(cfg, reactions.Deps{
		Reactions: r, Pins: r, Groups: dir, Messages: f.history, Resolver: resolver, Events: f.send,
		Clock: f.clock, Metrics: f.metrics, Log: log,
	})
	for _, u := range []int64{owner, member, admin, outsider} {
		if err := dir.CreateUser(ctx, tenant, social.User{ID: u}); err != nil {
			t.Fatal(err)
		}
	}
	if err := dir.AddFriendship(ctx, tenant, owner, member); err != nil {
		t.Fatal(err)
	}
	c, err := dir.CreateGroup(ctx, tenant, social.Group{ID: 10, Owner: owner}, 5000, []int64{member, admin}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := dir.SetRole(ctx, tenant, 10, admin, social.RoleAdmin); err != nil {
		t.Fatal(err)
	}
	f.group, f.pair = c.Topic, "p2p_1_2"
	return f
}

// post sends a text message and returns its seq.
func (f *fixture) post(t *testing.T, from int64, topicName, text string) int64 {
	t.Helper()
	content, _ := json.Marshal(map[string]string{"text": text})
	res, err := f.send.Send(context.Background(), send.Request{
		Tenant: tenant, From: from, FromDevice: 1, Address: conversation.Address{Topic: topicName},
		Draft: message.Draft{ClientMsgID: fmt.Sprintf("%s-%d-%s", topicName, from, text), Type: "text", Content: content},
	})
	if err != nil {
		t.Fatalf("send %q: %v", text, err)
	}
	return res.Message.Seq
}

func (f *fixture) target(user int64, topicName string, seq int64) reactions.Target {
	return reactions.Target{Tenant: tenant, User: user, Device: 7, Topic: topicName, Seq: seq}
}

// events returns the system events of the topic as their contents.
func (f *fixture) events(t *testing.T, topicName string) []string {
	t.Helper()
	res, err := f.history.Sync(context.Background(), history.SyncRequest{Tenant: tenant, User: owner, Topic: topicName, Limit: history.MaxLimit})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range res.Messages {
		if m.Type == "system" {
			out = append(out, string(m.Content))
		}
	}
	return out
}

func wantCode(t *testing.T, err error, code apperr.Code) {
	t.Helper()
	if apperr.CodeOf(err) != code {
		t.Fatalf("err = %v, want code %d", err, code)
	}
}

func TestReactIsIdempotentAndAnnouncedOnce(t *testing.T) {
	f := newFixture(t, reactions.Config{})
	ctx := context.Background()
	seq := f.post(t, owner, f.group, "hello")
	for range 2 {
		sum, err := f.svc.React(ctx, f.target(member, f.group, seq), "👍", false)
		if err != nil {
			t.Fatal(err)
		}
		if want := []msgref.ReactionCount{{Emoji: "👍", Count: 1, Mine: true}}; !reflect.DeepEqual(sum.Reactions, want) {
			t.Fatalf("summary %+v, want %+v", sum.Reactions, want)
		}
	}
	f.clock.Set(f.clock.Now().Add(time.Second))
	for range 2 {
		sum, err := f.svc.React(ctx, f.target(member, f.group, seq), "👍", true)
		if err != nil {
			t.Fatal(err)
		}
		if len(sum.Reactions) != 0 {
			t.Fatalf("summary after remove %+v, want none", sum.Reactions)
		}
	}
	want := []string{
		fmt.Sprintf(`{"event":"reaction","seq":%d,"emoji":"👍","action":"add","count":1}`, seq),
		fmt.Sprintf(`{"event":"reaction","seq":%d,"emoji":"👍","action":"remove","count":0}`, seq),
	}
	if got := f.events(t, f.group); !reflect.DeepEqual(got, want) {
		t.Fatalf("events %q, want one per change %q", got, want)
	}
	if got := f.metrics.Count("message_reaction_total", "add", "ok"); got != 2 {
		t.Fatalf("message_reaction_total add ok = %v, want 2", got)
	}
}

func TestReactOnASealedMonth(t *testing.T) {
	f := newFixture(t, reactions.Config{})
	ctx := context.Background()
	seq := f.post(t, owner, f.group, "september")
	f.clock.Set(time.Date(2026, 10, 9, 0, 0, 0, 0, time.UTC))
	if err := f.manager.Ensure(ctx, tenant); err != nil {
		t.Fatal(err)
	}
	sept := month.Of(start)
	if err := f.shards.SetState(ctx, tenant, sept, shard.Sealing, shard.Sealed); err != nil {
		t.Fatal(err)
	}
	sum, err := f.svc.React(ctx, f.target(member, f.group, seq), "🎉", false)
	if err != nil {
		t.Fatalf("react on a message of the sealed month: %v", err)
	}
	if len(sum.Reactions) != 1 || sum.Reactions[0].Count != 1 {
		t.Fatalf("summary %+v", sum.Reactions)
	}
	page, err := f.history.History(ctx, history.HistoryRequest{Tenant: tenant, User: owner, Topic: f.group})
	if err != nil {
		t.Fatal(err)
	}
	sums := f.svc.Summaries(ctx, tenant, owner, page)
	if want := []msgref.ReactionCount{{Emoji: "🎉", Count: 1}}; !reflect.DeepEqual(sums[seq], want) {
		t.Fatalf("the owner's summary of seq %d: %+v, want %+v (not mine)", seq, sums[seq], want)
	}
}

func TestReactRefusals(t *testing.T) {
	f := newFixture(t, reactions.Config{PerMessage: 2, PerUser: 1})
	ctx := context.Background()
	seq := f.post(t, owner, f.group, "hello")
	if _, err := f.svc.React(ctx, f.target(owner, f.group, seq), "👍", false); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.React(ctx, f.target(member, f.group, seq), "❤️", false); err != nil {
		t.Fatal(err)
	}
	before := f.events(t, f.group)
	for _, tt := range []struct {
		name   string
		target reactions.Target
		emoji  string
		code   apperr.Code
	}{
		{"unknown seq", f.target(member, f.group, seq+100), "👍", apperr.NotFound},
		{"seq zero", f.target(member, f.group, 0), "👍", apperr.InvalidArgument},
		{"emoji too long", f.target(member, f.group, seq), strings.Repeat("👍", 17), apperr.InvalidArgument},
		{"empty emoji", f.target(member, f.group, seq), "", apperr.InvalidArgument},
		{"emoji with a space", f.target(member, f.group, seq), "a b", apperr.InvalidArgument},
		{"not a member", f.target(outsider, f.group, seq), "👍", apperr.Forbidden},
		{"a third emoji", f.target(admin, f.group, seq), "😂", apperr.Forbidden},
		{"a second emoji of one user", f.target(owner, f.group, seq), "❤️", apperr.Forbidden},
		{"a system message", f.target(owner, f.group, seq+1), "👍", apperr.Forbidden},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := f.svc.React(ctx, tt.target, tt.emoji, false)
			wantCode(t, err, tt.code)
		})
	}
	if after := f.events(t, f.group); !reflect.DeepEqual(after, before) {
		t.Fatalf("refusals wrote events: %q", after[len(before):])
	}
	if got := f.metrics.Count("message_reaction_total", "add", "refused"); got != 9 {
		t.Fatalf("message_reaction_total add refused = %v, want 9", got)
	}
}

func TestPins(t *testing.T) {
	f := newFixture(t, reactions.Config{MaxPins: 2})
	ctx := context.Background()
	a, b, c := f.post(t, member, f.group, "a"), f.post(t, member, f.group, "b"), f.post(t, member, f.group, "c")
	p := f.post(t, member, f.pair, "p")
	for _, tt := range []struct {
		name  string
		user  int64
		topic string
		seq   int64
		unpin bool
		code  apperr.Code
		pins  []int64
	}{
		{"a member may not pin in a group", member, f.group, a, false, apperr.Forbidden, nil},
		{"an outsider may not", outsider, f.group, a, false, apperr.Forbidden, nil},
		{"the owner may", owner, f.group, a, false, apperr.OK, []int64{a}},
		{"twice is once", owner, f.group, a, false, apperr.OK, []int64{a}},
		{"an admin may", admin, f.group, b, false, apperr.OK, []int64{b, a}},
		{"no room for a third", owner, f.group, c, false, apperr.Forbidden, nil},
		{"unknown seq", owner, f.group, c + 100, false, apperr.NotFound, nil},
		{"unpin", admin, f.group, a, true, apperr.OK, []int64{b}},
		{"unpin twice", admin, f.group, a, true, apperr.OK, []int64{b}},
		{"either member of a pair may", member, f.pair, p, false, apperr.OK, []int64{p}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f.clock.Set(f.clock.Now().Add(time.Second))
			pins, err := f.svc.Pin(ctx, f.target(tt.user, tt.topic, tt.seq), tt.unpin)
			wantCode(t, err, tt.code)
			if err != nil {
				return
			}
			var seqs []int64
			for _, pin := range pins {
				seqs = append(seqs, pin.Seq)
			}
			if !reflect.DeepEqual(seqs, tt.pins) {
				t.Fatalf("pins %v, want %v", seqs, tt.pins)
			}
		})
	}
	want := []string{
		fmt.Sprintf(`{"event":"pin","seq":%d}`, a),
		fmt.Sprintf(`{"event":"pin","seq":%d}`, b),
		fmt.Sprintf(`{"event":"unpin","seq":%d}`, a),
	}
	if got := f.events(t, f.group); !reflect.DeepEqual(got, want) {
		t.Fatalf("events %q, want one per change %q", got, want)
	}
	if _, err := f.svc.Pins(ctx, tenant, outsider, f.group); apperr.CodeOf(err) != apperr.Forbidden {
		t.Fatalf("an outsider lists pins: %v, want 40301", err)
	}
}

func TestRetriesAfterOthersActed(t *testing.T) {
	f := newFixture(t, reactions.Config{})
	ctx := context.Background()
	seq := f.post(t, owner, f.group, "hello")
	for _, tt := range []struct {
		name   string
		user   int64
		emojis int // the 👍 count after the step
	}{
		{"the member reacts", member, 1},
		{"the owner reacts too", owner, 2},
		{"the member's retry answers the summary", member, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sum, err := f.svc.React(ctx, f.target(tt.user, f.group, seq), "👍", false)
			if err != nil {
				t.Fatal(err)
			}
			if len(sum.Reactions) != 1 || sum.Reactions[0].Count != tt.emojis {
				t.Fatalf("summary %+v, want 👍 x%d", sum.Reactions, tt.emojis)
			}
		})
	}
	before := len(f.events(t, f.group))
	if _, err := f.svc.Pin(ctx, f.target(owner, f.group, seq), false); err != nil {
		t.Fatal(err)
	}
	f.clock.Set(f.clock.Now().Add(time.Second))
	if _, err := f.svc.Pin(ctx, f.target(admin, f.group, seq), false); err != nil {
		t.Fatalf("an admin pins what the owner pinned: %v", err)
	}
	want := fmt.Sprintf(`{"event":"pin","seq":%d}`, seq)
	if got := f.events(t, f.group)[before:]; !reflect.DeepEqual(got, []string{want}) {
		t.Fatalf("pin events %q, want one %q", got, want)
	}
}

// TestChangesNeedTheRightToSend: a muted member or a blocked peer may read but not react or
// pin (issue 31), and the refusal changes nothing.
func TestChangesNeedTheRightToSend(t *testing.T) {
	f := newFixture(t, reactions.Config{})
	ctx := context.Background()
	g, p := f.post(t, owner, f.group, "group"), f.post(t, owner, f.pair, "pair")
	if err := f.dir.MuteMember(ctx, tenant, 10, admin, f.clock.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := f.dir.Block(ctx, tenant, owner, member); err != nil {
		t.Fatal(err)
	}
	f.resolve.InvalidateGroup(tenant, f.group) // as the group and block commands do
	f.resolve.InvalidatePair(tenant, owner, member)
	for _, tt := range []struct {
		name   string
		target reactions.Target
	}{
		{"a muted admin", f.target(admin, f.group, g)},
		{"a blocked peer", f.target(member, f.pair, p)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := f.events(t, tt.target.Topic)
			_, err := f.svc.React(ctx, tt.target, "👍", false)
			wantCode(t, err, apperr.Forbidden)
			_, err = f.svc.Pin(ctx, tt.target, false)
			wantCode(t, err, apperr.Forbidden)
			if _, err := f.svc.Reactors(ctx, tt.target, 0); err != nil {
				t.Fatalf("reading reactions: %v", err)
			}
			if after := f.events(t, tt.target.Topic); !reflect.DeepEqual(after, before) {
				t.Fatalf("refusals wrote events: %q", after[len(before):])
			}
			pins, err := f.svc.Pins(ctx, tenant, owner, tt.target.Topic)
			if err != nil || len(pins) != 0 {
				t.Fatalf("pins %v, %v; want none", pins, err)
			}
			rs, err := f.svc.Reactors(ctx, f.target(owner, tt.target.Topic, tt.target.Seq), 0)
			if err != nil || len(rs) != 0 {
				t.Fatalf("reactions %v, %v; want none", rs, err)
			}
		})
	}
}
