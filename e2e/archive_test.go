package e2e

// Archive and retention of sealed months, references across months and long-term search
// (issue 9; seed 000 §6.6, §8, §10) through the real binary, MariaDB and Redis: a month is
// archived and its table dropped while every query and reference keeps its answer, restored,
// purged by a retention policy, and searched in Chinese and English.

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/imdhq/imd/clients/go/client"
	"github.com/imdhq/imd/clients/go/wire"
)

// archiveServer starts imd on archiveDir (its search index is its own); with a tenant, it is
// another node of that tenant's deployment sharing the archive.
func archiveServer(t *testing.T, tenant, archiveDir string, env map[string]string) *Server {
	t.Helper()
	all := map[string]string{"IMD_ARCHIVE_DIR": archiveDir}
	for k, v := range env {
		all[k] = v
	}
	return Start(t, Options{Tenant: tenant, Env: all})
}

// get answers a GET as status and a canonical JSON body, so two answers compare as strings.
func get(t *testing.T, srv *Server, bearer, path string) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+srv.HTTPAddr+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+bearer)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("GET %s: %q: %v", path, raw, err)
	}
	canon, _ := json.Marshal(v)
	return fmt.Sprintf("%d %s", resp.StatusCode, canon)
}

// adminPath is an admin API path of the server's tenant.
func (s *Server) adminPath(path string) string { return "/admin/v1/tenants/" + s.Tenant + path }

// seal marks a month sealed directly, as the shard manager would after its late-write window.
func seal(t *testing.T, db *sql.DB, month string) {
	t.Helper()
	if _, err := db.Exec("UPDATE im_group_message_shards SET status = 'sealed' WHERE shard_month = ?", month); err != nil {
		t.Fatal(err)
	}
}

func shardStatus(t *testing.T, db *sql.DB, month string) string {
	t.Helper()
	var status string
	err := db.QueryRow("SELECT status FROM im_group_message_shards WHERE shard_month = ?", month).Scan(&status)
	if err == sql.ErrNoRows {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return status
}

func tableExists(t *testing.T, db *sql.DB, month string) bool {
	t.Helper()
	return countRows(t, db, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?", "im_group_messages_"+month) > 0
}

// monthOp runs an archive operation through the admin API, waiting for it to finish.
func (s *Server) monthOp(op, month string) {
	s.t.Helper()
	s.MustAdmin("POST", "/shards/"+month+"/"+op+"?wait=50s", nil, nil)
}

// fileMessage is a file message of user from, whose key has the shape of an upload of that
// user (a media key is checked at SEND: issue 33).
func fileMessage(tenant string, from int64, topic, clientID, name string, size int64) wire.SendMessageRequest {
	content, _ := json.Marshal(map[string]any{"key": uploadKey(tenant, from, clientID, "pdf"), "name": name, "size": size})
	return wire.SendMessageRequest{Topic: topic, ClientMsgID: clientID, Type: "file", Content: content}
}

func mustSend(t *testing.T, ctx context.Context, c *client.Conn, req wire.SendMessageRequest) wire.SendAck {
	t.Helper()
	ack, err := c.Send(ctx, req)
	if err != nil {
		t.Fatalf("send %s: %v", req.ClientMsgID, err)
	}
	return ack
}

// archivedGroup is a group with messages in three months: m0 (the current month, 1-8), m3
// (9-20, the month archived) and m4 (21-26). Some are files, some reply across months.
type archivedGroup struct {
	topic          string
	groupID        int64
	owner, member  int64
	ownerToken     string
	memberToken    string
	m0, m3, m4     string
	replies, files []int64
}

func newArchivedGroup(t *testing.T, srv *Server, ctx context.Context, groupID int64) archivedGroup {
	t.Helper()
	g := archivedGroup{groupID: groupID, owner: groupID*100 + 1, member: groupID*100 + 2, m0: Month(0), m3: Month(3), m4: Month(4)}
	g.ownerToken, g.memberToken = srv.User(g.owner), srv.User(g.member)
	g.topic = srv.Group(groupID, g.owner, g.member)
	c := srv.Connect(ctx, g.ownerToken, 1)
	sendN(t, ctx, c, g.topic, "old", 7)
	g.files = append(g.files, mustSend(t, ctx, c, fileMessage(srv.Tenant, g.owner, g.topic, "f1", "plan-v1.pdf", 1200)).Seq)
	srv.Advance(g.m3)
	sendN(t, ctx, c, g.topic, "mid", 5)
	g.files = append(g.files, mustSend(t, ctx, c, fileMessage(srv.Tenant, g.owner, g.topic, "f2", "归档方案.docx", 34_000)).Seq)
	reply := textMessage(g.topic, "r1", "回复上个月的第三条 about the old plan")
	reply.ReplySeq = 3
	g.replies = append(g.replies, mustSend(t, ctx, c, reply).Seq)
	for i, text := range []string{"月表归档以后还能搜索", "Archive the sealed month", "第三季度预算", "cold storage test", "最后一条"} {
		mustSend(t, ctx, c, textMessage(g.topic, fmt.Sprintf("m3-%d", i), text))
	}
	srv.Advance(g.m4)
	reply = textMessage(g.topic, "r2", "replying into the archived month")
	reply.ReplySeq = 11
	g.replies = append(g.replies, mustSend(t, ctx, c, reply).Seq)
	sendN(t, ctx, c, g.topic, "new", 5)
	return g
}

// views are the answers that must not change while m3 moves to the archive and back: paging,
// catch-up, exact and context reads for an operator and a member, replies, favorites, the
// file index, report evidence, and both searches.
func (g archivedGroup) views(t *testing.T, srv *Server) map[string]string {
	t.Helper()
	out := map[string]string{}
	admin := func(path string) { out["admin "+path] = get(t, srv, srv.AdminKey, srv.adminPath(path)) }
	user := func(path string) { out["user "+path] = get(t, srv, g.memberToken, path) }
	for _, q := range []string{"since=0&limit=200", "since=5&limit=10", "since=15&limit=20", "before=0&limit=200", "before=22&limit=10", "before=12&limit=5"} {
		admin("/topics/" + g.topic + "/messages?" + q)
		user("/api/v1/topics/" + g.topic + "/messages?" + q)
	}
	for seq := int64(1); seq <= 27; seq++ {
		admin(fmt.Sprintf("/topics/%s/messages/%d", g.topic, seq))
	}
	for _, seq := range []int64{8, 9, 14, 20, 21} {
		admin(fmt.Sprintf("/topics/%s/messages/%d/context?n=4", g.topic, seq))
		user(fmt.Sprintf("/api/v1/topics/%s/messages/%d", g.topic, seq))
	}
	for _, seq := range g.replies {
		user(fmt.Sprintf("/api/v1/topics/%s/messages/%d/reply", g.topic, seq))
	}
	user("/api/v1/favorites")
	user(fmt.Sprintf("/api/v1/groups/%d/files", g.groupID))
	admin("/reports")
	for _, q := range []string{"归档", "archive", "预算"} {
		user("/api/v1/search?q=" + url.QueryEscape(q))
	}
	from, to := url.QueryEscape(monthStart(g.m3).Format(time.RFC3339)), url.QueryEscape(monthStart(g.m4).AddDate(0, 1, 0).Format(time.RFC3339))
	admin("/search?q=" + url.QueryEscape("归档") + "&from=" + from + "&to=" + to)
	return out
}

func monthStart(m string) time.Time {
	t, _ := time.Parse("200601", m)
	return t
}

// sameAnswers compares views, except those whose key has the prefix skip ("" skips none).
func sameAnswers(t *testing.T, when string, got, want map[string]string, skip string) {
	t.Helper()
	for k, w := range want {
		if skip != "" && strings.HasPrefix(k, skip) {
			continue
		}
		if got[k] != w {
			t.Errorf("%s: %s changed:\n got %s\nwant %s", when, k, got[k], w)
		}
	}
}

// awaitSearch polls a search until it finds want messages (the index is fed asynchronously).
func awaitSearch(t *testing.T, srv *Server, token, q string, want int) []wire.Message {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var res struct {
			Messages []wire.Message `json:"messages"`
		}
		if code, e := call(t, srv, token, "GET", "/api/v1/search?q="+url.QueryEscape(q), nil, &res); code != http.StatusOK {
			t.Fatalf("search %q: HTTP %d %+v", q, code, e)
		}
		if len(res.Messages) == want || time.Now().After(deadline) {
			return res.Messages
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestArchiveDropAndReadBack(t *testing.T) {
	archiveDir := t.TempDir()
	srv := archiveServer(t, "", archiveDir, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	g := newArchivedGroup(t, srv, ctx, 91)
	// References into the month to archive, and a deleted range of the member inside it.
	for _, seq := range []int64{12, 3, 22} {
		if code, e := call(t, srv, g.memberToken, "POST", "/api/v1/favorites", map[string]any{"topic": g.topic, "seq": seq}, nil); code != http.StatusOK {
			t.Fatalf("favorite %d: HTTP %d %+v", seq, code, e)
		}
	}
	if code, e := call(t, srv, g.memberToken, "POST", "/api/v1/reports", map[string]any{"topic": g.topic, "seq": 15, "reason": "spam"}, nil); code != http.StatusOK {
		t.Fatalf("report: HTTP %d %+v", code, e)
	}
	memberConn := srv.Connect(ctx, g.memberToken, 1)
	if err := deleteRange(ctx, memberConn, g.topic, 16, 18); err != nil {
		t.Fatal(err)
	}
	// Seq 16 (月表归档…) is in the member's deleted range, the file name 归档方案 is not.
	if got := awaitSearch(t, srv, g.ownerToken, "归档", 2); len(got) != 2 {
		t.Fatalf("the owner's search before archiving found %d messages", len(got))
	}
	if got := awaitSearch(t, srv, g.memberToken, "归档", 1); len(got) != 1 || got[0].Seq != 14 {
		t.Fatalf("the member's search before archiving found %v", seqsOf(got))
	}
	for q, n := range map[string]int{"预算": 1, "month": 1} {
		if got := awaitSearch(t, srv, g.memberToken, q, n); len(got) != n {
			t.Fatalf("the member's search for %q found %v", q, seqsOf(got))
		}
	}
	// Pages of recent messages come from the Redis hot cache; without it they come from the
	// month tables, and later from the archive, which is what this test compares.
	srv.dropHot(ctx, g.topic)
	db := srv.TenantDB()
	before := g.views(t, srv)
	for _, want := range []struct{ key, holds string }{
		{fmt.Sprintf("user /api/v1/topics/%s/messages/%d/reply", g.topic, g.replies[0]), `"seq":3,`},
		{fmt.Sprintf("user /api/v1/topics/%s/messages/%d/reply", g.topic, g.replies[1]), `"text":"mid 2"`},
		{"user /api/v1/favorites", `"seq":12,"topic"`},
		{fmt.Sprintf("user /api/v1/groups/%d/files", g.groupID), `"name":"归档方案.docx"`},
		{"admin /reports", `"evidence":{`},
		{"user /api/v1/search?q=" + url.QueryEscape("预算"), `第三季度预算`},
	} {
		if got := before[want.key]; !strings.HasPrefix(got, "200 ") || !strings.Contains(got, want.holds) {
			t.Fatalf("%s = %s; want 200 holding %s", want.key, got, want.holds)
		}
	}

	// The month must be sealed, and outside the shard manager's window to be dropped.
	if code := srv.Admin("POST", "/shards/"+g.m3+"/archive?wait=50s", nil, nil); code != http.StatusConflict {
		t.Fatalf("archiving a month that is not sealed: HTTP %d", code)
	}
	seal(t, db, g.m3)
	var check struct {
		State  string `json:"state"`
		Result struct {
			Problems []string `json:"problems"`
			Rows     int64    `json:"rows"`
		} `json:"result"`
	}
	srv.MustAdmin("POST", "/shards/"+g.m3+"/archive/check?wait=50s", nil, &check)
	if check.State != "done" || len(check.Result.Problems) != 0 || check.Result.Rows != 12 {
		t.Fatalf("check: %+v", check)
	}
	if code := srv.Admin("POST", "/shards/"+g.m3+"/drop?wait=50s", nil, nil); code != http.StatusConflict {
		t.Fatalf("dropping a month that is not archived: HTTP %d", code)
	}
	srv.monthOp("archive", g.m3)
	if st := shardStatus(t, db, g.m3); st != "archived" {
		t.Fatalf("after archive the month is %q", st)
	}
	var man struct {
		Rows   int64 `json:"rows"`
		Topics []struct {
			Topic          string `json:"topic"`
			MinSeq, MaxSeq int64
			Count          int64
		} `json:"topics"`
	}
	srv.MustAdmin("GET", "/shards/"+g.m3+"/archive", nil, &man)
	if man.Rows != 12 || len(man.Topics) != 1 || man.Topics[0].Topic != g.topic {
		t.Fatalf("manifest: %+v", man)
	}
	sameAnswers(t, "archived", g.views(t, srv), before, "")

	srv.monthOp("drop", g.m3)
	if tableExists(t, db, g.m3) {
		t.Fatal("the month table is still there after drop")
	}
	sameAnswers(t, "dropped", g.views(t, srv), before, "")
	for _, op := range []string{"get", "page"} {
		if n := srv.metricValue("group_message_archive_read_total", "op", op); n == 0 {
			t.Errorf("no %s was read from the archive", op)
		}
	}
	// The first reads fetched the month's chunks; reading again finds them in the chunk cache.
	if n := srv.metricValue("group_message_archive_chunk_cache_total", "result", "miss"); n == 0 {
		t.Error("no archive chunk was fetched")
	}
	rises(t, srv, func() { sameAnswers(t, "dropped, read again", g.views(t, srv), before, "") },
		metric("group_message_archive_chunk_cache_total", "result", "hit"))
	if code := srv.Admin("POST", "/shards/"+g.m0+"/drop?wait=50s", nil, nil); code != http.StatusConflict {
		t.Fatalf("dropping the current month: HTTP %d", code)
	}

	// Another node reads the shared archive with cold caches (its search index is its own).
	other := archiveServer(t, srv.Tenant, archiveDir, nil)
	sameAnswers(t, "dropped, read by another node", g.views(t, other), before, "user /api/v1/search")
	other.Stop()

	srv.monthOp("restore", g.m3)
	if st := shardStatus(t, db, g.m3); st != "sealed" || !tableExists(t, db, g.m3) {
		t.Fatalf("after restore the month is %q, table there: %v", st, tableExists(t, db, g.m3))
	}
	if got := srv.SeqsInTable(db, g.m3, g.topic); !slices.Equal(got, seqRange(9, 20)) {
		t.Fatalf("restored table holds %v", got)
	}
	sameAnswers(t, "restored", g.views(t, srv), before, "")
}

// dropHot deletes a topic's hot-message cache, so reads go to the month tables or archive.
func (s *Server) dropHot(ctx context.Context, topic string) {
	s.t.Helper()
	rc := s.Redis()
	if err := rc.Do(ctx, rc.B().Del().Key(s.hotKey(topic)).Build()).Error(); err != nil {
		s.t.Fatal(err)
	}
}

// routeMonths reads the months of a topic's Redis route ZSET and route_meta HASH.
func (s *Server) routeMonths(ctx context.Context, topic string) (zset, meta []string) {
	s.t.Helper()
	rc := s.Redis()
	k := s.topicKeys(topic)
	zset, err := rc.Do(ctx, rc.B().Zrange().Key(k.Route(topic)).Min("0").Max("-1").Build()).AsStrSlice()
	if err != nil {
		s.t.Fatal(err)
	}
	meta, err = rc.Do(ctx, rc.B().Hkeys().Key(k.RouteMeta(topic)).Build()).AsStrSlice()
	if err != nil {
		s.t.Fatal(err)
	}
	slices.Sort(zset)
	slices.Sort(meta)
	return zset, meta
}

// TestRetentionPurgesExactlyTheExpiredMonths: with "keep 2 months online, purge after 4",
// counted from the active month m7, the sealed months m3 (age 4) is purged — table, archive
// files, mirror rows, Redis route segments and search entries — while m4 and m5 (ages 3 and 2)
// are archived with their tables dropped and still read, and m6 stays as it is.
func TestRetentionPurgesExactlyTheExpiredMonths(t *testing.T) {
	archiveDir := t.TempDir()
	srv := archiveServer(t, "", archiveDir, map[string]string{
		"IMD_ARCHIVE_RETENTION_KEEP_ONLINE_MONTHS": "2", "IMD_ARCHIVE_RETENTION_PURGE_AFTER_MONTHS": "4",
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := newChat(t, srv, ctx, 92, 2, 1)
	var tok struct {
		Token string `json:"token"`
	}
	srv.MustAdmin("POST", "/tokens", map[string]any{"user_id": 920_001}, &tok) // the chat's first user
	token := tok.Token
	months := []string{Month(3), Month(4), Month(5), Month(6)}
	for i, m := range months {
		srv.Advance(m)
		mustSend(t, ctx, c.conns[0], textMessage(c.topic, "keep-"+m, fmt.Sprintf("月份 %s 的消息 month%d", m, i+3)))
		sendN(t, ctx, c.conns[0], c.topic, "m"+m, 2)
	}
	srv.Advance(Month(7))
	db := srv.TenantDB()
	for _, m := range months[:3] {
		seal(t, db, m)
	}
	if got := awaitSearch(t, srv, token, "消息", 4); len(got) != 4 {
		t.Fatalf("search before retention found %d messages", len(got))
	}

	var plan struct {
		Steps []struct {
			Month, Action, Outcome string
		} `json:"steps"`
	}
	srv.MustAdmin("GET", "/retention", nil, &plan)
	want := []string{Month(3) + " purge", Month(4) + " archive", Month(5) + " archive"}
	var got []string
	for _, s := range plan.Steps {
		got = append(got, s.Month+" "+s.Action)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("plan %v, want %v", got, want)
	}
	var run struct {
		State  string `json:"state"`
		Result struct {
			Steps []struct{ Month, Outcome string } `json:"steps"`
		} `json:"result"`
	}
	srv.MustAdmin("POST", "/retention/run?wait=50s", nil, &run)
	for _, s := range run.Result.Steps {
		if s.Outcome != "done" {
			t.Fatalf("retention step %s: %s", s.Month, s.Outcome)
		}
	}
	if run.State != "done" || len(run.Result.Steps) != 3 {
		t.Fatalf("retention run: %+v", run)
	}

	for _, tc := range []struct {
		month, status string
		table         bool
	}{
		{Month(3), "", false}, {Month(4), "archived", false}, {Month(5), "archived", false}, {Month(6), "sealing", true},
	} {
		if st, tb := shardStatus(t, db, tc.month), tableExists(t, db, tc.month); st != tc.status || tb != tc.table {
			t.Errorf("%s: status %q table %v, want %q %v", tc.month, st, tb, tc.status, tc.table)
		}
	}
	var mirror []string
	for _, seg := range srv.Mirror(db, c.topic) {
		mirror = append(mirror, seg.Month)
	}
	if want := months[1:]; !slices.Equal(mirror, want) {
		t.Errorf("mirror months %v, want %v", mirror, want)
	}
	zset, meta := srv.routeMonths(ctx, c.topic)
	if want := months[1:]; !slices.Equal(zset, want) || !slices.Equal(meta, want) {
		t.Errorf("route months %v, route_meta %v, want %v", zset, meta, want)
	}
	if left := countFiles(t, archiveDir, srv.Tenant+"/"+Month(3)); left != 0 {
		t.Errorf("%d archive files of the purged month left", left)
	}
	if countFiles(t, archiveDir, srv.Tenant+"/"+Month(4)) == 0 {
		t.Error("the archived month has no files")
	}

	// Everything from m4 on still reads, from the archive and the live month. (The hot cache
	// still holds the purged messages, sent moments ago; a purged month is long past its window.)
	srv.dropHot(ctx, c.topic)
	var page messagesBody
	srv.MustAdmin("GET", "/topics/"+c.topic+"/messages?since=0&limit=200", nil, &page)
	if got := seqsOf(page.Messages); !slices.Equal(got, seqRange(4, 12)) {
		t.Fatalf("messages after retention: %v, want 4-12", got)
	}
	if got := awaitSearch(t, srv, token, "消息", 3); len(got) != 3 || slices.Contains(seqsOf(got), 1) {
		t.Fatalf("search after retention: %v", seqsOf(got))
	}
	srv.MustAdmin("GET", "/retention", nil, &plan)
	if len(plan.Steps) != 0 {
		t.Fatalf("a second plan still has steps: %+v", plan.Steps)
	}
}

// countFiles counts the regular files under dir/sub.
func countFiles(t *testing.T, dir, sub string) int {
	t.Helper()
	n := 0
	_ = filepath.WalkDir(filepath.Join(dir, sub), func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			n++
		}
		return nil
	})
	return n
}

// TestLongSearchFindsChineseAndEnglishWithinMembershipAndDellog: the index finds Chinese and
// English text in live and archived months, and a hit reaches a user only while the user is
// a member, has not deleted the message for themself, and the message was not recalled.
func TestLongSearchFindsChineseAndEnglishWithinMembershipAndDellog(t *testing.T) {
	archiveDir := t.TempDir()
	srv := archiveServer(t, "", archiveDir, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	alice, bob, carol := int64(930_001), int64(930_002), int64(930_003)
	ta, tb, tc := srv.User(alice), srv.User(bob), srv.User(carol)
	shared := srv.Group(93, alice, bob)    // alice and bob
	private := srv.Group(94, alice, carol) // alice and carol
	ca := srv.Connect(ctx, ta, 1)
	srv.Advance(Month(3))
	mustSend(t, ctx, ca, textMessage(shared, "zh", "我们的归档方案已经完成"))
	mustSend(t, ctx, ca, textMessage(shared, "en", "The Archive plan is ready for review"))
	mustSend(t, ctx, ca, textMessage(private, "secret", "私密的归档计划 secret archive"))
	srv.Advance(Month(4))
	mustSend(t, ctx, ca, textMessage(shared, "later", "下个月继续讨论归档"))

	tests := []struct {
		name, token, q string
		want           []string
	}{
		{"Chinese, every conversation of the user", ta, "归档", []string{shared + "/3", private + "/1", shared + "/1"}},
		{"Chinese, only the user's conversations", tb, "归档", []string{shared + "/3", shared + "/1"}},
		{"English any case", tb, "ARCHIVE", []string{shared + "/2"}},
		{"other member", tc, "archive", []string{private + "/1"}},
		{"phrase by all its bigrams", ta, "归档方案", []string{shared + "/1"}},
		{"no match", tb, "budget", nil},
	}
	check := func(when string) {
		t.Helper()
		for _, tc := range tests {
			got := hitsOf(awaitSearch(t, srv, tc.token, tc.q, len(tc.want)))
			if !slices.Equal(got, tc.want) {
				t.Errorf("%s: %s: search %q = %v, want %v", when, tc.name, tc.q, got, tc.want)
			}
		}
	}
	check("live")

	// Month 3 archived and dropped: hits there are read from the archive.
	db := srv.TenantDB()
	seal(t, db, Month(3))
	srv.monthOp("archive", Month(3))
	srv.monthOp("drop", Month(3))
	check("archived")

	// The backfill: another node starts with an empty index and finds nothing until it
	// reindexes the stored months, the archived one included.
	other := archiveServer(t, srv.Tenant, archiveDir, nil)
	if got := hitsOf(awaitSearch(t, other, ta, "归档", 0)); len(got) != 0 {
		t.Fatalf("a fresh index found %v", got)
	}
	var reindexed struct {
		State  string           `json:"state"`
		Result map[string]int64 `json:"result"`
	}
	other.MustAdmin("POST", "/search/reindex?wait=50s", map[string]string{}, &reindexed)
	if reindexed.State != "done" || reindexed.Result["messages"] < 4 {
		t.Fatalf("reindex: %+v", reindexed)
	}
	if got := hitsOf(awaitSearch(t, other, ta, "归档", 3)); !slices.Equal(got, tests[0].want) {
		t.Fatalf("after reindexing: %v, want %v", got, tests[0].want)
	}
	other.Stop()

	// A topic the user is not in is refused outright.
	if code, e := call(t, srv, tb, "GET", "/api/v1/search?q=archive&topic="+private, nil, nil); code != http.StatusForbidden {
		t.Fatalf("searching another group's topic: HTTP %d %+v", code, e)
	}
	// Deleted for oneself (dellog): gone for bob only.
	cb := srv.Connect(ctx, tb, 1)
	if err := deleteRange(ctx, cb, shared, 1, 2); err != nil {
		t.Fatal(err)
	}
	if got := hitsOf(awaitSearch(t, srv, tb, "归档", 1)); !slices.Equal(got, []string{shared + "/3"}) {
		t.Fatalf("bob after deleting seq 1: %v", got)
	}
	if got := hitsOf(awaitSearch(t, srv, ta, "归档", 3)); len(got) != 3 {
		t.Fatalf("alice after bob's delete: %v", got)
	}
	// Recalled: gone for everyone.
	rec := mustSend(t, ctx, ca, textMessage(shared, "oops", "撤回这条归档消息"))
	if got := awaitSearch(t, srv, ta, "撤回", 1); len(got) != 1 {
		t.Fatalf("the new message is not found: %v", hitsOf(got))
	}
	if _, err := recall(ctx, ca, shared, rec.Seq); err != nil {
		t.Fatal(err)
	}
	if got := hitsOf(awaitSearch(t, srv, ta, "撤回", 0)); len(got) != 0 {
		t.Fatalf("a recalled message is still found: %v", got)
	}
	// Removed from the group: bob finds nothing of it any more.
	if code := srv.Admin("DELETE", fmt.Sprintf("/groups/93/members/%d", bob), nil, nil); code != http.StatusOK {
		t.Fatalf("remove bob: HTTP %d", code)
	}
	deadline := time.Now().Add(10 * time.Second) // membership answers are cached for a few seconds
	for {
		got := hitsOf(awaitSearch(t, srv, tb, "归档", 0))
		if len(got) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("bob still finds %v after leaving the group", got)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func hitsOf(msgs []wire.Message) []string {
	var out []string
	for _, m := range msgs {
		out = append(out, fmt.Sprintf("%s/%d", m.Topic, m.Seq))
	}
	return out
}
