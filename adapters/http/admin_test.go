package http

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/imdhq/imd/core/loop/routerepair"
	"log/slog"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/jwt"
	"github.com/imdhq/imd/adapters/memory"
	"github.com/imdhq/imd/clients/go/wire"
	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/auth"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/shard"
	"github.com/imdhq/imd/core/loop/shardmanager"
	"github.com/imdhq/imd/core/store/membership"
	"github.com/imdhq/imd/core/usecase/admin"
	"github.com/imdhq/imd/core/usecase/conversation"
	"github.com/imdhq/imd/core/usecase/directory"
	"github.com/imdhq/imd/core/usecase/history"
	"github.com/imdhq/imd/ports"
)

var tokenSecret = []byte("http-test-secret-0123456789abcdef")

// stack is the admin API over the real core services and the in-memory adapters.
type stack struct {
	*harness
	store  *memory.MessageStore
	tokens *jwt.Tokens
	now    time.Time
}

func newStack(t *testing.T) *stack {
	t.Helper()
	return newStackWith(t, func(s *memory.ShardStore) ports.ShardStore { return s })
}

// newStackWith lets a test replace the shard store, e.g. by one that fails.
func newStackWith(t *testing.T, shardsOf func(*memory.ShardStore) ports.ShardStore) *stack {
	t.Helper()
	return newStackOf(t, Config{AdminKey: adminKey}, shardsOf)
}

// newStackOf serves the stack with the given listener config.
func newStackOf(t *testing.T, cfg Config, shardsOf func(*memory.ShardStore) ports.ShardStore) *stack {
	t.Helper()
	now := time.Date(2026, 11, 15, 12, 0, 0, 0, time.UTC)
	clock := memory.NewClock(now)
	log := slog.New(slog.DiscardHandler)
	dir := memory.NewDirectory()
	mem := memory.NewShardStore()
	shards := shardsOf(mem)
	store := memory.NewMessageStore(mem)
	routes := memory.NewRouteCache()
	months := memory.NewMonthState(clock.Now)
	metrics := memory.NewMetrics()
	ids := memory.NewIDs(clock)
	tokens := jwt.New(tokenSecret)
	members := membership.New(dir, clock, time.Minute)
	manager := shardmanager.New(shardmanager.Config{SealingDays: 7}, shardmanager.Deps{
		Store: shards, Months: months, Metrics: metrics, Log: log,
	})
	if err := manager.Ensure(context.Background(), "default"); err != nil {
		t.Logf("shard manager: %v", err) // a failing shard store is the point of some tests
	}
	resolver := conversation.NewResolver(dir, ids, members, conversation.WithClock(clock))
	social := directory.New(directory.Deps{
		Directory: dir, Profiles: dir, Friends: dir, Blocks: dir, Groups: dir, Resolver: resolver, IDs: ids, Clock: clock, Log: log,
	})
	adminSvc := admin.New(admin.Deps{
		Directory: dir, Tokens: tokens, Routes: routerepair.New(routerepair.Config{}, routerepair.Deps{Store: store, Routes: routes, Metrics: metrics, Log: log}), Shards: shards,
		Manager: manager, Social: social, Tenants: func(name string) bool { return name == "default" },
	})
	hist := history.New(history.Deps{
		Store: store, Routes: routes, Months: months, Metrics: metrics, Resolver: resolver, Log: log,
	})
	h := newHarness(t, cfg, Deps{Admin: adminSvc, History: hist, Social: SocialDeps{Directory: social},
		Shards: ShardOps{Manager: manager}})
	return &stack{harness: h, store: store, tokens: tokens, now: now}
}

// ok sends an admin request that must succeed and decodes its body into out.
func (s *stack) ok(method, path, body string, out any) {
	s.t.Helper()
	rec := s.do(method, "/admin/v1/tenants/default"+path, body)
	if rec.Code != http.StatusOK {
		s.t.Fatalf("%s %s = %d %s", method, path, rec.Code, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		s.t.Errorf("%s %s Content-Type = %q", method, path, ct)
	}
	if out != nil {
		if err := json.Unmarshal(rec.Body.Bytes(), out); err != nil {
			s.t.Fatalf("%s %s body %s: %v", method, path, rec.Body, err)
		}
	}
}

func (s *stack) fails(method, path, body string, status int, code apperr.Code) {
	s.t.Helper()
	wantError(s.t, s.do(method, "/admin/v1/tenants/default"+path, body), status, code)
}

// seed creates users 1-3 and group 5 of all three.
func (s *stack) seed() {
	s.t.Helper()
	for id := 1; id <= 3; id++ {
		s.ok("POST", "/users", fmt.Sprintf(`{"user_id":%d,"nickname":"u%d"}`, id, id), nil)
	}
	s.ok("POST", "/groups", `{"group_id":5,"owner":1,"members":[2,3]}`, nil)
}

// appendMessages stores messages of grp_5 directly, as the send path would.
func (s *stack) appendMessages(m month.Month, msgs ...message.Message) {
	s.t.Helper()
	for _, msg := range msgs {
		msg.Topic, msg.GroupID, msg.Month = "grp_5", 5, m
		if msg.MsgID == 0 {
			msg.MsgID = msg.Seq * 1000
		}
		if msg.Type == "" {
			msg.Type = "text"
		}
		if msg.Status == "" {
			msg.Status = message.StatusNormal
		}
		if msg.Version == 0 {
			msg.Version = 1
		}
		if msg.CreatedAt.IsZero() {
			msg.CreatedAt = s.now.Add(time.Duration(msg.Seq) * time.Second)
		}
		if msg.ClientMsgID == "" {
			msg.ClientMsgID = fmt.Sprintf("c%d", msg.Seq)
		}
		if _, err := s.store.Append(context.Background(), "default", msg, "h"); err != nil {
			s.t.Fatalf("append seq %d: %v", msg.Seq, err)
		}
	}
}

func TestUsers(t *testing.T) {
	s := newStack(t)
	var got map[string]any
	s.ok("POST", "/users", `{"user_id":42,"nickname":"ann","extra":"ignored"}`, &got)
	if got["user_id"] != 42.0 || len(got) != 1 {
		t.Errorf("body = %v, want {user_id: 42}", got)
	}
	s.ok("POST", "/users", `{"user_id":42}`, nil) // creating again is harmless
}

func TestTokens(t *testing.T) {
	s := newStack(t)
	s.seed()
	var got struct{ Token string }
	s.ok("POST", "/tokens", `{"user_id":2}`, &got)
	id, err := s.tokens.Verify(got.Token)
	if err != nil {
		t.Fatalf("issued token does not verify: %v", err)
	}
	if id != (auth.Identity{Tenant: "default", UserID: 2}) {
		t.Errorf("token identity = %+v", id)
	}
	s.ok("POST", "/tokens", `{"user_id":2,"ttl_seconds":60}`, &got)
	if _, err := s.tokens.Verify(got.Token); err != nil {
		t.Errorf("token with ttl does not verify: %v", err)
	}
	s.fails("POST", "/tokens", `{"user_id":99}`, 404, apperr.NotFound)
	s.fails("POST", "/tokens", `{}`, 400, apperr.InvalidArgument)
}

func TestFriendships(t *testing.T) {
	s := newStack(t)
	s.seed()
	var got map[string]any
	s.ok("POST", "/friendships", `{"user_a":1,"user_b":2}`, &got)
	if len(got) != 0 {
		t.Errorf("body = %v, want {}", got)
	}
	s.fails("POST", "/friendships", `{"user_a":1,"user_b":77}`, 404, apperr.NotFound)
	s.fails("POST", "/friendships", `{"user_a":1}`, 400, apperr.InvalidArgument)
}

func TestGroups(t *testing.T) {
	s := newStack(t)
	s.seed()
	var got map[string]any
	s.ok("POST", "/groups", `{"group_id":6,"owner":1,"members":[]}`, &got)
	if got["group_id"] != 6.0 || got["topic"] != "grp_6" || got["conversation_id"].(float64) <= 0 {
		t.Errorf("body = %v", got)
	}
	s.fails("POST", "/groups", `{"group_id":6,"owner":1,"members":[2]}`, 409, apperr.Conflict)
	s.fails("POST", "/groups", `{"group_id":7,"owner":1,"members":[2,88]}`, 404, apperr.NotFound)

	var added map[string]any
	s.ok("POST", "/groups/6/members", `{"user_ids":[2,3,2]}`, &added)
	if len(added) != 0 {
		t.Errorf("add members body = %v, want {}", added)
	}
	s.fails("POST", "/groups/8/members", `{"user_ids":[2]}`, 404, apperr.NotFound)
	s.fails("POST", "/groups/6/members", `{"user_ids":[99]}`, 404, apperr.NotFound)
}

func TestGetMessage(t *testing.T) {
	s := newStack(t)
	s.seed()
	edited := s.now.Add(time.Hour)
	s.appendMessages(month.Of(s.now),
		message.Message{Seq: 1, From: 1, Content: json.RawMessage(`{"text":"hi"}`)},
		message.Message{Seq: 2, From: 2, Type: "image", Content: json.RawMessage(`{"key":"k/1.png","w":3}`),
			Mentions: []int64{1, 3}, MentionAll: true, ReplySeq: 1, Version: 2, EditedAt: edited},
	)

	var plain map[string]json.RawMessage
	s.ok("GET", "/topics/grp_5/messages/1", "", &plain)
	wantKeys := []string{"topic", "conversation_id", "seq", "msg_id", "from", "client_msg_id", "type",
		"content", "mentions", "mention_all", "reply_seq", "status", "version", "created_at"}
	if keys := sortedKeys(plain); !slices.Equal(keys, sorted(wantKeys)) {
		t.Errorf("keys = %v, want %v (edited_at absent when never edited)", keys, sorted(wantKeys))
	}
	if string(plain["mentions"]) != "[]" {
		t.Errorf("mentions = %s, want []", plain["mentions"])
	}
	if string(plain["content"]) != `{"text":"hi"}` {
		t.Errorf("content = %s, want the raw object", plain["content"])
	}
	if string(plain["created_at"]) != fmt.Sprint(s.now.Add(time.Second).UnixMilli()) {
		t.Errorf("created_at = %s, want ms", plain["created_at"])
	}

	var full wire.Message
	s.ok("GET", "/topics/grp_5/messages/2", "", &full)
	editedAt := edited.UnixMilli()
	want := wire.Message{
		Topic: "grp_5", Seq: 2, MsgID: 2000, From: 2, ClientMsgID: "c2", Type: "image",
		Content: json.RawMessage(`{"key":"k/1.png","w":3}`), Mentions: []int64{1, 3}, MentionAll: true,
		ReplySeq: 1, Status: wire.StatusNormal, Version: 2,
		CreatedAt: s.now.Add(2 * time.Second).UnixMilli(), EditedAt: &editedAt,
	}
	if !reflect.DeepEqual(full, want) {
		t.Errorf("message = %+v\nwant      %+v", full, want)
	}

	s.fails("GET", "/topics/grp_5/messages/3", "", 404, apperr.NotFound)
	s.fails("GET", "/topics/grp_9/messages/1", "", 404, apperr.NotFound)
}

func TestListMessagesAcrossMonths(t *testing.T) {
	s := newStack(t)
	s.seed()
	nov := month.Of(s.now)
	s.appendMessages(nov,
		message.Message{Seq: 1, From: 1, Content: json.RawMessage(`{"text":"1"}`)},
		message.Message{Seq: 2, From: 1, Content: json.RawMessage(`{"text":"2"}`)},
		message.Message{Seq: 3, From: 2, Status: message.StatusDeleted}, // a closed seq
		message.Message{Seq: 4, From: 2, Content: json.RawMessage(`{"text":"4"}`)},
	)
	var adv map[string]string
	s.ok("POST", "/shards/advance", `{"month":"`+nov.Next().String()+`"}`, &adv)
	if adv["active_month"] != nov.Next().String() {
		t.Fatalf("advance = %v", adv)
	}
	s.appendMessages(nov.Next(),
		message.Message{Seq: 5, From: 3, Content: json.RawMessage(`{"text":"5"}`)},
		message.Message{Seq: 6, From: 3, Content: json.RawMessage(`{"text":"6"}`)},
	)

	tests := []struct {
		query    string
		wantSeqs []int64
		lastSeq  *int64
		hasMore  *bool
	}{
		{"", []int64{6, 5, 4, 2, 1}, nil, nil},
		{"?limit=2", []int64{6, 5}, nil, nil},
		{"?before=5&limit=2", []int64{4, 2}, nil, nil},
		{"?before=1", []int64{}, nil, nil},
		{"?since=0", []int64{1, 2, 3, 4, 5, 6}, ptr[int64](6), ptr(false)},
		{"?since=2&limit=2", []int64{3, 4}, ptr[int64](4), ptr(true)},
		{"?since=6", []int64{}, ptr[int64](6), ptr(false)},
		{"?before=&since=4", []int64{5, 6}, ptr[int64](6), ptr(false)},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			var got struct {
				Messages []wire.Message `json:"messages"`
				LastSeq  *int64         `json:"last_seq"`
				HasMore  *bool          `json:"has_more"`
			}
			rec := s.do("GET", "/admin/v1/tenants/default/topics/grp_5/messages"+tt.query, "")
			if rec.Code != http.StatusOK {
				t.Fatalf("status %d %s", rec.Code, rec.Body)
			}
			if !strings.Contains(rec.Body.String(), `"messages":[`) {
				t.Errorf("messages is not an array: %s", rec.Body)
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
				t.Fatal(err)
			}
			seqs := []int64{}
			for _, m := range got.Messages {
				seqs = append(seqs, m.Seq)
			}
			if !slices.Equal(seqs, tt.wantSeqs) {
				t.Errorf("seqs = %v, want %v", seqs, tt.wantSeqs)
			}
			if fmt.Sprint(deref(got.LastSeq)) != fmt.Sprint(deref(tt.lastSeq)) || fmt.Sprint(deref(got.HasMore)) != fmt.Sprint(deref(tt.hasMore)) {
				t.Errorf("last_seq, has_more = %v, %v; want %v, %v", deref(got.LastSeq), deref(got.HasMore), deref(tt.lastSeq), deref(tt.hasMore))
			}
		})
	}
}

func TestShardsAndAdvance(t *testing.T) {
	s := newStack(t)
	s.seed()
	nov := month.Of(s.now)
	s.appendMessages(nov, message.Message{Seq: 1, From: 1, Content: json.RawMessage(`{}`)})

	var got struct {
		Shards []map[string]any `json:"shards"`
	}
	s.ok("GET", "/shards", "", &got)
	byMonth := map[string]map[string]any{}
	for _, row := range got.Shards {
		byMonth[row["shard_month"].(string)] = row
		for _, k := range []string{"shard_month", "table_name", "status", "row_count", "min_created_at", "max_created_at", "updated_at", "table_dropped"} {
			if _, ok := row[k]; !ok {
				t.Errorf("row %v lacks %s", row, k)
			}
		}
	}
	cur := byMonth[nov.String()]
	if cur == nil {
		t.Fatalf("no row for %s in %v", nov, got.Shards)
	}
	if cur["table_name"] != "im_group_messages_"+nov.String() || cur["status"] != string(shard.Writable) ||
		cur["row_count"] != 1.0 || cur["min_created_at"] != float64(s.now.Add(time.Second).UnixMilli()) {
		t.Errorf("current month row = %v", cur)
	}
	if next := byMonth[nov.Next().String()]; next == nil || next["status"] != string(shard.Prepared) || next["min_created_at"] != 0.0 {
		t.Errorf("next month row = %v, want prepared and empty", next)
	}

	var adv map[string]string
	s.ok("POST", "/shards/advance", `{"month":"`+nov.Add(2).String()+`"}`, &adv)
	if adv["active_month"] != nov.Add(2).String() {
		t.Errorf("advance = %v", adv)
	}
	s.fails("POST", "/shards/advance", `{"month":"`+nov.String()+`"}`, 400, apperr.InvalidArgument) // never backward
	s.fails("POST", "/shards/advance", `{"month":"`+nov.Add(14).String()+`"}`, 400, apperr.InvalidArgument)
}

func TestRebuildRoute(t *testing.T) {
	s := newStack(t)
	s.seed()
	nov := month.Of(s.now)
	s.appendMessages(nov,
		message.Message{Seq: 1, From: 1, Content: json.RawMessage(`{}`)},
		message.Message{Seq: 2, From: 1, Content: json.RawMessage(`{}`)},
	)
	s.ok("POST", "/shards/advance", `{"month":"`+nov.Next().String()+`"}`, nil)
	s.appendMessages(nov.Next(), message.Message{Seq: 3, From: 1, Content: json.RawMessage(`{}`)})

	var got routeResponse
	s.ok("POST", "/topics/grp_5/route/rebuild", "", &got)
	want := routeResponse{Topic: "grp_5", Segments: []segmentJSON{
		{Month: nov.String(), MinSeq: 1, MaxSeq: 2, Count: 2},
		{Month: nov.Next().String(), MinSeq: 3, MaxSeq: 3, Count: 1},
	}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("rebuild = %+v, want %+v", got, want)
	}

	rec := s.do("POST", "/admin/v1/tenants/default/topics/grp_77/route/rebuild", "")
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"segments":[]`) {
		t.Errorf("rebuild of an empty topic = %d %s, want segments []", rec.Code, rec.Body)
	}
}

// failingShards is a shard store whose catalog is down.
type failingShards struct{ *memory.ShardStore }

func (failingShards) Catalog(context.Context, string) ([]shard.Info, error) {
	return nil, errors.New("mysql: connection reset by peer")
}

func TestDependencyFailureIsBusy(t *testing.T) {
	s := newStackWith(t, func(m *memory.ShardStore) ports.ShardStore { return failingShards{m} })
	rec := s.do("GET", "/admin/v1/tenants/default/shards", "")
	wantError(t, rec, http.StatusServiceUnavailable, apperr.Busy)
	if strings.Contains(rec.Body.String(), "mysql") {
		t.Errorf("cause leaked to the client: %s", rec.Body)
	}
	if !strings.Contains(s.logs.String(), "connection reset by peer") {
		t.Errorf("cause not logged: %s", s.logs)
	}
}

func sortedKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return sorted(keys)
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

func ptr[T any](v T) *T { return &v }

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}
