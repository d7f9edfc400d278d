package http

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/imdhq/imd/core/loop/routerepair"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/jwt"
	"github.com/imdhq/imd/adapters/localfs"
	"github.com/imdhq/imd/adapters/memory"
	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/auth"
	"github.com/imdhq/imd/core/domain/delivery"
	"github.com/imdhq/imd/core/domain/social"
	"github.com/imdhq/imd/core/domain/tenant"
	"github.com/imdhq/imd/core/loop/shardmanager"
	"github.com/imdhq/imd/core/store/membership"
	"github.com/imdhq/imd/core/usecase/admin"
	"github.com/imdhq/imd/core/usecase/authn"
	"github.com/imdhq/imd/core/usecase/conversation"
	"github.com/imdhq/imd/core/usecase/directory"
	"github.com/imdhq/imd/core/usecase/history"
	"github.com/imdhq/imd/core/usecase/reports"
	"github.com/imdhq/imd/core/usecase/send"
	"github.com/imdhq/imd/core/usecase/tenantregistry"
	"github.com/imdhq/imd/core/usecase/uploads"
)

// clientStack is the client API over the real core services and the in-memory adapters, for
// tenants "default" and "other".
type clientStack struct {
	*harness
	tokens *jwt.Tokens
	queue  *memory.DeliverQueue
	admin  *admin.Service
	files  *localfs.Store
}

func newClientStack(t *testing.T) *clientStack {
	t.Helper()
	ctx := context.Background()
	clock := memory.NewClock(time.Now().UTC())
	log := slog.New(slog.DiscardHandler)
	dir := memory.NewDirectory()
	shards := memory.NewShardStore()
	store := memory.NewMessageStore(shards)
	routes := memory.NewRouteCache()
	months := memory.NewMonthState(clock.Now)
	metrics := memory.NewMetrics()
	ids := memory.NewIDs(clock)
	queue := memory.NewDeliverQueue(clock.Now)
	tokens := jwt.New(tokenSecret)
	manager := shardmanager.New(shardmanager.Config{SealingDays: 7}, shardmanager.Deps{Store: shards, Months: months, Metrics: metrics, Log: log})
	for _, tn := range []string{"default", "other"} {
		if err := manager.Ensure(ctx, tn); err != nil {
			t.Fatal(err)
		}
	}
	resolver := conversation.NewResolver(dir, ids, membership.New(dir, clock, time.Minute), conversation.WithClock(clock))
	socialSvc := directory.New(directory.Deps{
		Directory: dir, Profiles: dir, Friends: dir, Blocks: dir, Groups: dir, Resolver: resolver, IDs: ids, Clock: clock, Log: log,
	})
	hist := history.New(history.Deps{Store: store, Routes: routes, Months: months, Metrics: metrics, Resolver: resolver, Log: log})
	files, err := localfs.New(localfs.Config{Dir: t.TempDir(), BaseURL: "http://imd.test", Secret: []byte("files")})
	if err != nil {
		t.Fatal(err)
	}
	media := uploads.New(uploads.Config{MaxSize: 1 << 20}, uploads.Deps{
		Store: files, Clock: clock, Refs: memory.NewReferences(), Profiles: dir, Resolver: resolver,
	})
	seqs := memory.NewSeqAllocator(months, clock.Now)
	sender := send.New(send.Config{MsgIDWindow: time.Minute}, send.Deps{
		Seq: seqs, Store: store, FollowUp: &memory.CommitFollowUp{Routes: routes, Queue: queue, Seqs: seqs}, IDs: ids, Clock: clock,
		Metrics: metrics, Resolver: resolver, Media: media, Log: log, Months: manager,
	})
	registry, err := tenantregistry.New(tenantregistry.Config{Configured: []tenant.Info{{Name: "default"}, {Name: "other"}}},
		tenantregistry.Deps{Store: memory.NewTenantStore(), Clock: clock, Log: log,
			Activate: func(context.Context, tenant.Info) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	adminSvc := admin.New(admin.Deps{Directory: dir, Tokens: tokens, Routes: routerepair.New(routerepair.Config{}, routerepair.Deps{Store: store, Routes: routes, Metrics: metrics, Log: log}), Shards: shards,
		Manager: manager, Social: socialSvc, Summaries: memory.NewSummaries(shards, dir), Tenants: registry.Known})
	h := newHarness(t, Config{AdminKey: adminKey}, Deps{Admin: adminSvc, History: hist, Social: SocialDeps{
		Auth:      authn.New(authn.Config{MaxTTL: admin.MaxTokenTTL}, authn.Deps{Tokens: tokens, Revocations: memory.NewRevocations(), Tenants: registry.Known, Users: dir, Clock: clock}),
		Directory: socialSvc, Tenants: registry, Send: sender,
		Uploads: media,
		Reports: reports.New(reports.Deps{Store: memory.NewReports(), History: hist, IDs: ids, Clock: clock}),
		Files:   files,
	}})
	return &clientStack{harness: h, tokens: tokens, queue: queue, admin: adminSvc, files: files}
}

// user creates a user of a tenant and returns a token for it.
func (s *clientStack) user(tn string, id int64) string {
	s.t.Helper()
	if err := s.admin.CreateUser(context.Background(), tn, social.User{ID: id}); err != nil {
		s.t.Fatal(err)
	}
	tok, err := s.tokens.Issue(auth.Identity{Tenant: tn, UserID: id}, time.Hour)
	if err != nil {
		s.t.Fatal(err)
	}
	return tok
}

// as sends a client API request with a user token.
func (s *clientStack) as(token, method, path, body string) (int, map[string]any) {
	s.t.Helper()
	rec := s.doWith(method, path, body, map[string]string{"Authorization": "Bearer " + token})
	var out map[string]any
	if rec.Body.Len() > 0 {
		if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
			s.t.Fatalf("%s %s: body %q: %v", method, path, rec.Body, err)
		}
	}
	return rec.Code, out
}

// ok is as for a call that must succeed.
func (s *clientStack) ok(token, method, path, body string) map[string]any {
	s.t.Helper()
	code, out := s.as(token, method, path, body)
	if code != http.StatusOK {
		s.t.Fatalf("%s %s = %d %v", method, path, code, out)
	}
	return out
}

func (s *clientStack) fails(token, method, path, body string, status int, code apperr.Code) {
	s.t.Helper()
	got, out := s.as(token, method, path, body)
	if got != status || out["code"] != float64(code) || out["msg"] == "" {
		s.t.Fatalf("%s %s = %d %v, want %d code %d", method, path, got, out, status, code)
	}
}

func TestClientAuthentication(t *testing.T) {
	s := newClientStack(t)
	tok := s.user("default", 1)
	unknown, _ := s.tokens.Issue(auth.Identity{Tenant: "gone", UserID: 1}, time.Hour)
	nobody, _ := s.tokens.Issue(auth.Identity{Tenant: "default", UserID: 404}, time.Hour) // issue 33
	tests := []struct {
		name   string
		header string
	}{
		{"no header", ""},
		{"admin key instead", "Bearer " + adminKey},
		{"not bearer", "Basic " + tok},
		{"token of an unknown tenant", "Bearer " + unknown},
		{"token of a user that does not exist", "Bearer " + nobody},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			headers := map[string]string{}
			if tt.header != "" {
				headers["Authorization"] = tt.header
			}
			wantError(t, s.doWith("GET", "/api/v1/me", "", headers), http.StatusUnauthorized, apperr.Unauthenticated)
		})
	}
	if me := s.ok(tok, "GET", "/api/v1/me", ""); me["user_id"] != 1.0 {
		t.Fatalf("me = %v", me)
	}
	s.ok(tok, "POST", "/api/v1/logout", "")
	s.fails(tok, "GET", "/api/v1/me", "", http.StatusUnauthorized, apperr.Unauthenticated)
}

func TestClientSendEntersTheDeliverQueue(t *testing.T) {
	s := newClientStack(t)
	a, b := s.user("default", 1), s.user("default", 2)
	s.fails(a, "POST", "/api/v1/messages", `{"to_user":2,"client_msg_id":"c1","type":"text","content":{"text":"hi"}}`, http.StatusForbidden, apperr.Forbidden)
	s.ok(a, "POST", "/api/v1/friends/requests", `{"user_id":2,"message":"hello"}`)
	if reqs := s.ok(b, "GET", "/api/v1/friends/requests", ""); len(reqs["requests"].([]any)) != 1 {
		t.Fatalf("requests = %v", reqs)
	}
	s.ok(b, "POST", "/api/v1/friends/requests/1/accept", "")

	ack := s.ok(a, "POST", "/api/v1/messages", `{"to_user":2,"client_msg_id":"c1","type":"text","content":{"text":"hi"},"device_id":7}`)
	if ack["topic"] != "p2p_1_2" || ack["seq"] != 1.0 || ack["msg_id"].(float64) <= 0 {
		t.Fatalf("ack = %v", ack)
	}
	job, ok, err := s.queue.Take(context.Background(), "default", 0, 0)
	if err != nil || !ok || job.Kind != delivery.KindMessage || job.Topic != "p2p_1_2" || job.ExcludeDevice != 7 {
		t.Fatalf("deliver job = %+v, %v, %v", job, ok, err)
	}
	// B answers; one conversation both ways.
	back := s.ok(b, "POST", "/api/v1/messages", `{"topic":"p2p_1_2","client_msg_id":"c2","type":"text","content":{"text":"yo"}}`)
	if back["seq"] != 2.0 || back["conversation_id"] != ack["conversation_id"] {
		t.Fatalf("reply ack = %v", back)
	}
	// PROTOCOL §4: exactly one address, as on the frame listener.
	for _, body := range []string{
		`{"client_msg_id":"c5","type":"text","content":{"text":"?"}}`,
		`{"topic":"p2p_1_2","to_user":1,"client_msg_id":"c5","type":"text","content":{"text":"?"}}`,
		`{"topic":"p2p_1_2","conversation_id":` + fmt.Sprint(back["conversation_id"]) + `,"client_msg_id":"c5","type":"text","content":{"text":"?"}}`,
	} {
		s.fails(b, "POST", "/api/v1/messages", body, http.StatusBadRequest, apperr.InvalidArgument)
	}
	page := s.ok(b, "GET", "/api/v1/topics/p2p_1_2/messages?since=0", "")
	if msgs := page["messages"].([]any); len(msgs) != 2 || page["has_more"] != false {
		t.Fatalf("history = %v", page)
	}
	one := s.ok(a, "GET", "/api/v1/topics/p2p_1_2/messages/2", "")
	if one["from"] != 2.0 {
		t.Fatalf("message 2 = %v", one)
	}

	s.ok(b, "POST", "/api/v1/blocks", `{"user_id":1}`)
	s.fails(a, "POST", "/api/v1/messages", `{"to_user":2,"client_msg_id":"c3","type":"text","content":{"text":"?"}}`, http.StatusForbidden, apperr.Forbidden)
	s.fails(b, "POST", "/api/v1/messages", `{"to_user":1,"client_msg_id":"c4","type":"text","content":{"text":"?"}}`, http.StatusForbidden, apperr.Forbidden)
	if blocks := s.ok(b, "GET", "/api/v1/blocks", ""); fmt.Sprint(blocks["user_ids"]) != "[1]" {
		t.Fatalf("blocks = %v", blocks)
	}
}

func TestClientGroups(t *testing.T) {
	s := newClientStack(t)
	owner, admin, member := s.user("default", 1), s.user("default", 2), s.user("default", 3)
	outsider := s.user("default", 4)
	g := s.ok(owner, "POST", "/api/v1/groups", `{"name":"team","members":[2,3]}`)
	id := int64(g["group_id"].(float64))
	base := fmt.Sprintf("/api/v1/groups/%d", id)
	s.ok(owner, "PUT", base+"/members/2/role", `{"role":"admin"}`)
	s.fails(admin, "PUT", base+"/members/3/role", `{"role":"admin"}`, http.StatusForbidden, apperr.Forbidden)
	s.fails(outsider, "GET", base, "", http.StatusForbidden, apperr.Forbidden)
	if info := s.ok(member, "GET", base, ""); info["owner"] != 1.0 || info["name"] != "team" || info["mute_all"] != false {
		t.Fatalf("group = %v", info)
	}

	post := func(token, cid string) (int, map[string]any) {
		return s.as(token, "POST", "/api/v1/messages", fmt.Sprintf(`{"topic":%q,"client_msg_id":%q,"type":"text","content":{"text":"x"}}`, g["topic"], cid))
	}
	s.ok(admin, "PUT", base+"/mute_all", `{"mute_all":true}`)
	if code, _ := post(member, "m1"); code != http.StatusForbidden {
		t.Fatalf("member during mute-all: %d", code)
	}
	if code, _ := post(admin, "a1"); code != http.StatusOK {
		t.Fatalf("admin during mute-all: %d", code)
	}
	if code, _ := post(owner, "o1"); code != http.StatusOK {
		t.Fatalf("owner during mute-all: %d", code)
	}
	s.ok(owner, "PUT", base+"/mute_all", `{"mute_all":false}`)
	s.ok(admin, "PUT", base+"/members/3/mute", `{"duration_seconds":60}`)
	if code, _ := post(member, "m2"); code != http.StatusForbidden {
		t.Fatalf("muted member: %d", code)
	}
	members := s.ok(owner, "GET", base+"/members", "")["members"].([]any)
	if len(members) != 3 || members[2].(map[string]any)["muted_until"] == nil {
		t.Fatalf("members = %v", members)
	}
	s.ok(admin, "PUT", base+"/members/3/mute", `{"duration_seconds":0}`)
	if code, out := post(member, "m3"); code != http.StatusOK {
		t.Fatalf("unmuted member: %d %v", code, out)
	}
	s.ok(owner, "DELETE", base+"/members/3", "")
	if code, _ := post(member, "m4"); code != http.StatusForbidden {
		t.Fatalf("removed member: %d", code)
	}
	s.fails(member, "GET", "/api/v1/topics/"+g["topic"].(string)+"/messages?since=0", "", http.StatusForbidden, apperr.Forbidden)
	if mine := s.ok(admin, "GET", "/api/v1/groups", "")["conversations"].([]any); len(mine) != 1 {
		t.Fatalf("groups of the admin = %v", mine)
	}

	for _, c := range []struct{ path, body string }{
		{base + "/members/3/mute", `{}`},
		{base + "/members/3/mute", `{"duration_seconds":-1}`},
		{base + "/members/3/mute", `{"duration_seconds":99999999999}`},
		{base + "/mute_all", `{}`},
		{base + "/members/2/role", `{"role":"boss"}`},
	} {
		s.fails(owner, "PUT", c.path, c.body, http.StatusBadRequest, apperr.InvalidArgument)
	}
}

func TestTenantsDoNotSeeEachOther(t *testing.T) {
	s := newClientStack(t)
	ctx := context.Background()
	a, other := s.user("default", 1), s.user("other", 1)
	s.user("default", 2)
	if _, err := s.admin.CreateGroup(ctx, "default", 5, 1, []int64{2}); err != nil {
		t.Fatal(err)
	}
	s.ok(a, "POST", "/api/v1/messages", `{"topic":"grp_5","client_msg_id":"x","type":"text","content":{"text":"secret"}}`)
	// The same user id in another tenant is another user: nothing of "default" is visible.
	s.fails(other, "GET", "/api/v1/topics/grp_5/messages", "", http.StatusForbidden, apperr.Forbidden)
	s.fails(other, "GET", "/api/v1/groups/5", "", http.StatusForbidden, apperr.Forbidden)
	s.fails(other, "GET", "/api/v1/users/2", "", http.StatusNotFound, apperr.NotFound)
	s.fails(other, "POST", "/api/v1/messages", `{"topic":"grp_5","client_msg_id":"y","type":"text","content":{"text":"?"}}`, http.StatusForbidden, apperr.Forbidden)
}

func TestUploadsAndFiles(t *testing.T) {
	s := newClientStack(t)
	tok := s.user("default", 1)
	grant := s.ok(tok, "POST", "/api/v1/uploads", `{"content_type":"image/png","size":5}`)
	u, err := url.Parse(grant["url"].(string))
	if err != nil || grant["method"] != "PUT" {
		t.Fatalf("grant = %v", grant)
	}
	put := s.doWith("PUT", u.RequestURI(), "hello", map[string]string{"Content-Type": "image/png"})
	if put.Code != http.StatusOK {
		t.Fatalf("PUT = %d %s", put.Code, put.Body)
	}
	wantError(t, s.doWith("PUT", u.RequestURI(), "hello", map[string]string{"Content-Type": "text/html"}), http.StatusForbidden, apperr.Forbidden)

	key := grant["key"].(string)
	dl := s.ok(tok, "POST", "/api/v1/downloads", fmt.Sprintf(`{"key":%q}`, key))
	du, _ := url.Parse(dl["url"].(string))
	get := s.doWith("GET", du.RequestURI(), "", nil)
	if get.Code != http.StatusOK || get.Body.String() != "hello" || get.Header().Get("Content-Type") != "image/png" ||
		get.Header().Get("X-Content-Type-Options") != "nosniff" {
		t.Fatalf("GET = %d %q %v", get.Code, get.Body, get.Header())
	}
	wantError(t, s.doWith("GET", strings.Replace(du.RequestURI(), "sig=", "sig=00", 1), "", nil), http.StatusForbidden, apperr.Forbidden)

	other := s.user("other", 1)
	s.fails(other, "POST", "/api/v1/downloads", fmt.Sprintf(`{"key":%q}`, key), http.StatusNotFound, apperr.NotFound)
	// Issue 33: a user of the same tenant who learns the key gets no link, until a message of a
	// conversation it may read references the key.
	friend, stranger := s.user("default", 2), s.user("default", 3)
	for _, who := range []string{friend, stranger} {
		s.fails(who, "POST", "/api/v1/downloads", fmt.Sprintf(`{"key":%q}`, key), http.StatusForbidden, apperr.Forbidden)
	}
	if err := s.admin.AddFriendship(context.Background(), "default", 1, 2); err != nil {
		t.Fatal(err)
	}
	image := func(clientID, key string) string {
		return fmt.Sprintf(`{"to_user":2,"client_msg_id":%q,"type":"image","content":{"key":%q}}`, clientID, key)
	}
	s.ok(tok, "POST", "/api/v1/messages", image("img-1", key))
	s.ok(friend, "POST", "/api/v1/downloads", fmt.Sprintf(`{"key":%q}`, key))
	s.fails(stranger, "POST", "/api/v1/downloads", fmt.Sprintf(`{"key":%q}`, key), http.StatusForbidden, apperr.Forbidden)
	// A key that is no upload of the tenant, or one the sender may not read, is refused at SEND.
	s.fails(tok, "POST", "/api/v1/messages", image("img-2", "../../../etc/passwd"), http.StatusBadRequest, apperr.InvalidArgument)
	s.fails(tok, "POST", "/api/v1/messages", image("img-3", "other/1/20300405/0123456789abcdef0123456789abcdef.png"), http.StatusBadRequest, apperr.InvalidArgument)
	s.fails(tok, "POST", "/api/v1/messages", image("img-4", "default/3/20300405/0123456789abcdef0123456789abcdef.png"), http.StatusForbidden, apperr.Forbidden)
	s.fails(tok, "POST", "/api/v1/uploads", `{"content_type":"text/html","size":5}`, http.StatusBadRequest, apperr.InvalidArgument)
	s.fails(tok, "POST", "/api/v1/uploads", `{"content_type":"image/png","size":99999999}`, http.StatusRequestEntityTooLarge, apperr.TooLarge)

	// The uploaded key works as an avatar and in a media message.
	if me := s.ok(tok, "PUT", "/api/v1/me", fmt.Sprintf(`{"nickname":"ann","avatar":%q}`, key)); me["avatar"] != key || me["nickname"] != "ann" {
		t.Fatalf("profile = %v", me)
	}
	// An avatar is shown to everyone of the tenant.
	s.ok(stranger, "POST", "/api/v1/downloads", fmt.Sprintf(`{"key":%q}`, key))
}

func TestReportsReachOperators(t *testing.T) {
	s := newClientStack(t)
	ctx := context.Background()
	a, b := s.user("default", 1), s.user("default", 2)
	outsider := s.user("default", 3)
	if _, err := s.admin.CreateGroup(ctx, "default", 5, 1, []int64{2}); err != nil {
		t.Fatal(err)
	}
	s.ok(a, "POST", "/api/v1/messages", `{"topic":"grp_5","client_msg_id":"x","type":"text","content":{"text":"spam"}}`)
	r := s.ok(b, "POST", "/api/v1/reports", `{"topic":"grp_5","seq":1,"reason":"spam"}`)
	if r["status"] != "open" || r["report_id"].(float64) <= 0 {
		t.Fatalf("report = %v", r)
	}
	s.fails(outsider, "POST", "/api/v1/reports", `{"topic":"grp_5","seq":1}`, http.StatusForbidden, apperr.Forbidden)
	s.fails(b, "POST", "/api/v1/reports", `{"topic":"grp_5","seq":0}`, http.StatusBadRequest, apperr.InvalidArgument)

	rec := s.do("GET", "/admin/v1/tenants/default/reports", "")
	var list struct {
		Reports []struct {
			ReportID int64 `json:"report_id"`
			Evidence struct {
				Content map[string]string `json:"content"`
			} `json:"evidence"`
		} `json:"reports"`
	}
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &list) != nil || len(list.Reports) != 1 || list.Reports[0].Evidence.Content["text"] != "spam" {
		t.Fatalf("admin reports = %d %s", rec.Code, rec.Body)
	}
	rec = s.do("PUT", fmt.Sprintf("/admin/v1/tenants/default/reports/%d", list.Reports[0].ReportID), `{"status":"resolved"}`)
	if rec.Code != http.StatusOK {
		t.Fatalf("resolve = %d %s", rec.Code, rec.Body)
	}
}

func TestAdminSocialAndTenants(t *testing.T) {
	s := newClientStack(t)
	tok := s.user("default", 1)
	s.user("default", 2)
	adminOK := func(method, path, body string) map[string]any {
		t.Helper()
		rec := s.do(method, path, body)
		var out map[string]any
		if rec.Code/100 != 2 || json.Unmarshal(rec.Body.Bytes(), &out) != nil {
			t.Fatalf("%s %s = %d %s", method, path, rec.Code, rec.Body)
		}
		return out
	}
	adminOK("POST", "/admin/v1/tenants/default/groups", `{"group_id":9,"owner":1,"members":[2]}`)
	adminOK("PUT", "/admin/v1/tenants/default/groups/9/members/2/role", `{"role":"admin"}`)
	adminOK("PUT", "/admin/v1/tenants/default/groups/9/members/2/mute", `{"duration_seconds":30}`)
	adminOK("PUT", "/admin/v1/tenants/default/groups/9/mute_all", `{"mute_all":true}`)
	if g := adminOK("GET", "/admin/v1/tenants/default/groups/9", ""); g["mute_all"] != true {
		t.Fatalf("group = %v", g)
	}
	if groups := adminOK("GET", "/admin/v1/tenants/default/users/2/groups", ""); len(groups["conversations"].([]any)) != 1 {
		t.Fatalf("groups of 2 = %v", groups)
	}
	adminOK("DELETE", "/admin/v1/tenants/default/groups/9/members/2", "")
	wantError(t, s.do("DELETE", "/admin/v1/tenants/default/groups/9/members/1", ""), http.StatusForbidden, apperr.Forbidden)
	adminOK("POST", "/admin/v1/tenants/default/blocks", `{"user_id":1,"blocked_user_id":2}`)
	if b := adminOK("GET", "/admin/v1/tenants/default/users/1/blocks", ""); fmt.Sprint(b["user_ids"]) != "[2]" {
		t.Fatalf("blocks = %v", b)
	}
	adminOK("DELETE", "/admin/v1/tenants/default/blocks/1/2", "")
	adminOK("POST", "/admin/v1/tenants/default/friendships", `{"user_a":1,"user_b":2}`)
	adminOK("DELETE", "/admin/v1/tenants/default/friendships/1/2", "")
	if st := adminOK("GET", "/admin/v1/tenants/default/stats", ""); st["users"] != 2.0 || st["groups"] != 1.0 {
		t.Fatalf("stats = %v", st)
	}
	wantError(t, s.do("GET", "/admin/v1/tenants/default/stats?from=2030", ""), http.StatusBadRequest, apperr.InvalidArgument)

	// Revocation through the admin API.
	adminOK("POST", "/admin/v1/tenants/default/tokens/revoke", fmt.Sprintf(`{"token":%q}`, tok))
	s.fails(tok, "GET", "/api/v1/me", "", http.StatusUnauthorized, apperr.Unauthenticated)
	wantError(t, s.do("POST", "/admin/v1/tenants/default/tokens/revoke", `{}`), http.StatusBadRequest, apperr.InvalidArgument)
	wantError(t, s.do("POST", "/admin/v1/tenants/other/tokens/revoke", fmt.Sprintf(`{"token":%q}`, s.user("default", 5))), http.StatusBadRequest, apperr.InvalidArgument)

	// Tenants: listing, provisioning, and the key.
	list := adminOK("GET", "/admin/v1/tenants", "")
	if len(list["tenants"].([]any)) != 2 {
		t.Fatalf("tenants = %v", list)
	}
	rec := s.do("POST", "/admin/v1/tenants", `{"tenant":"gamma"}`)
	if rec.Code != http.StatusCreated || !strings.Contains(rec.Body.String(), `"database":"imd_gamma"`) {
		t.Fatalf("provision = %d %s", rec.Code, rec.Body)
	}
	if rec := s.do("POST", "/admin/v1/tenants", `{"tenant":"gamma"}`); rec.Code != http.StatusOK {
		t.Fatalf("provision again = %d %s", rec.Code, rec.Body)
	}
	// A tenant on another server: its DSN is recorded and listed with the password masked.
	rec = s.do("POST", "/admin/v1/tenants", `{"tenant":"far","dsn":"imd:hunter2@tcp(10.0.0.2:3306)/?parseTime=true"}`)
	if rec.Code != http.StatusCreated || !strings.Contains(rec.Body.String(), `"dsn":"imd:********@tcp(10.0.0.2:3306)/?parseTime=true"`) || strings.Contains(rec.Body.String(), "hunter2") {
		t.Fatalf("provision on another server = %d %s", rec.Code, rec.Body)
	}
	if rec := s.do("GET", "/admin/v1/tenants", ""); strings.Contains(rec.Body.String(), "hunter2") || !strings.Contains(rec.Body.String(), `"dsn":"imd:********@`) {
		t.Fatalf("tenants list shows the server badly: %s", rec.Body)
	}
	wantError(t, s.do("POST", "/admin/v1/tenants", `{"tenant":"gamma","dsn":"imd:imd@tcp(10.0.0.2:3306)/"}`), http.StatusConflict, apperr.Conflict)
	wantError(t, s.do("POST", "/admin/v1/tenants", `{"tenant":"Bad"}`), http.StatusBadRequest, apperr.InvalidArgument)
	wantError(t, s.doWith("GET", "/admin/v1/tenants", "", nil), http.StatusUnauthorized, apperr.Unauthenticated)
}

func TestMaskPassword(t *testing.T) {
	for dsn, want := range map[string]string{
		"imd:pw@tcp(db:3306)/?parseTime=true": "imd:********@tcp(db:3306)/?parseTime=true",
		"imd:p@ss:w/rd@tcp(db:3306)/imd?x=y":  "imd:********@tcp(db:3306)/imd?x=y",
		"imd@tcp(db:3306)/":                   "imd@tcp(db:3306)/",
		"tcp(db:3306)/":                       "tcp(db:3306)/",
		"":                                    "",
		"imd:pw@unix(/run/mysqld/mysqld.sock)/db": "imd:********@unix(/run/mysqld/mysqld.sock)/db",
	} {
		if got := maskPassword(dsn); got != want {
			t.Errorf("maskPassword(%q) = %q; want %q", dsn, got, want)
		}
	}
}
