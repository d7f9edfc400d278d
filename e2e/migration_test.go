package e2e

// Seed 000 §12 item 12 through the real binary: the legacy table im_group_messages migrates
// into the month tables while clients keep sending and reading (seed 000 §9).

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/mysql/legacygen"
	"github.com/imdhq/imd/adapters/snowflake"
	"github.com/imdhq/imd/clients/go/client"
	"github.com/imdhq/imd/clients/go/wire"
	"github.com/imdhq/imd/cmd/imctl/adminapi"
)

// migrationEnv runs the copy in small, quick batches and lets finish reach every read fast.
func migrationEnv(rowsPerSecond int) map[string]string {
	return map[string]string{
		"IMD_MIGRATION_DUAL_READ": "true", "IMD_MIGRATION_BATCH_SIZE": "2000",
		"IMD_MIGRATION_ROWS_PER_SECOND": strconv.Itoa(rowsPerSecond),
		"IMD_MIGRATION_POLL_INTERVAL":   "200ms", "IMD_MIGRATION_STATUS_TTL": "200ms",
	}
}

// envInt reads a size from the environment, so bigger runs need no code change.
func envInt(t testing.TB, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q: want a positive number", name, v)
	}
	return n
}

// legacyTenant is a server whose tenant database holds a generated legacy table, with the
// users, groups and friendships of its topics created through the admin API.
type legacyTenant struct {
	srv   *Server
	admin *adminapi.Client
	sum   legacygen.Summary
}

func newLegacyTenant(t testing.TB, env map[string]string, spec legacygen.Spec) *legacyTenant {
	t.Helper()
	srv := Start(t, Options{Env: env})
	ctx := context.Background()
	spec.IDs = legacyIDs(t)
	sum, err := legacygen.Generate(ctx, srv.TenantDB(), spec)
	if err != nil {
		t.Fatal(err)
	}
	lt := &legacyTenant{srv: srv, admin: adminapi.New("http://"+srv.HTTPAddr, srv.AdminKey, srv.Tenant, nil), sum: sum}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	users := sum.Users()
	for part := range slices.Chunk(users, max(1, len(users)/16)) {
		wg.Go(func() {
			for _, u := range part {
				if err := lt.admin.CreateUser(ctx, u, ""); err != nil {
					errs <- fmt.Errorf("user %d: %w", u, err)
					return
				}
			}
		})
	}
	wg.Wait()
	for _, tp := range sum.Topics {
		if tp.GroupID != 0 {
			_, err = lt.admin.CreateGroup(ctx, tp.GroupID, tp.Owner, tp.Members[1:])
		} else {
			err = lt.admin.Friend(ctx, tp.Members[0], tp.Members[1])
		}
		if err != nil {
			t.Fatalf("%s: %v", tp.Name, err)
		}
	}
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return lt
}

// reader is a member of a topic, connected.
type reader struct {
	topic legacygen.Topic
	conn  *client.Conn
}

func (lt *legacyTenant) readers(ctx context.Context, topics []legacygen.Topic) []reader {
	out := make([]reader, len(topics))
	for i, tp := range topics {
		tok, err := lt.admin.Token(ctx, tp.Members[0], time.Hour)
		if err != nil {
			lt.srv.t.Fatal(err)
		}
		out[i] = reader{topic: tp, conn: lt.srv.Connect(ctx, tok, 1)}
	}
	return out
}

// sampleTopics picks the busiest groups, a middle and a quiet one, and two P2P pairs.
func sampleTopics(sum legacygen.Summary) []legacygen.Topic {
	var groups, pairs []legacygen.Topic
	for _, tp := range sum.Topics {
		if tp.GroupID != 0 {
			groups = append(groups, tp)
		} else {
			pairs = append(pairs, tp)
		}
	}
	return []legacygen.Topic{groups[0], groups[1], groups[len(groups)/2], groups[len(groups)-1], pairs[0], pairs[len(pairs)-1]}
}

// view renders everything a member and an admin read of a topic, limited to seqs ≤ upTo:
// SYNC_MESSAGES and GET_HISTORY over TCP (the member's deleted ranges hidden), and the admin
// API's exact get, context and search. It also checks that the member's sync shows every seq
// at most once, in order. Equal views mean equal answers.
func (lt *legacyTenant) view(ctx context.Context, r reader, upTo int64) (string, error) {
	var b strings.Builder
	line := func(m wire.Message) {
		if m.Seq <= upTo {
			sum := sha256.Sum256(m.Content)
			fmt.Fprintf(&b, " %d/%d/%d/%s/%d/%d/%s", m.Seq, m.MsgID, m.ConversationID, m.Status, m.Version, m.CreatedAt, hex.EncodeToString(sum[:6]))
		}
	}
	b.WriteString("sync:")
	var last int64
	for since := int64(0); ; {
		msgs, fin, err := r.conn.SyncMessages(ctx, r.topic.Name, since, 200)
		if err != nil {
			return "", fmt.Errorf("sync %s: %w", r.topic.Name, err)
		}
		for _, m := range msgs {
			if m.Seq <= last {
				return "", fmt.Errorf("sync %s: seq %d after %d: duplicated or out of order", r.topic.Name, m.Seq, last)
			}
			last = m.Seq
			line(m)
		}
		if !fin.HasMore {
			break
		}
		since = fin.LastSeq
	}
	b.WriteString("\nhistory:")
	for before := int64(0); ; {
		page, err := r.conn.History(ctx, r.topic.Name, before, 100)
		if err != nil {
			return "", fmt.Errorf("history %s: %w", r.topic.Name, err)
		}
		for _, m := range page {
			line(m)
		}
		if len(page) < 100 {
			break
		}
		before = page[len(page)-1].Seq
	}
	b.WriteString("\nget:")
	for _, sq := range []int64{1, (r.topic.MaxSeq + 1) / 2, r.topic.MaxSeq} {
		m, err := lt.admin.Message(ctx, r.topic.Name, sq)
		switch {
		case err == nil:
			line(m)
		case adminapi.CodeOf(err) == 40401:
			fmt.Fprintf(&b, " %d/none", sq)
		default:
			return "", fmt.Errorf("get %s seq %d: %w", r.topic.Name, sq, err)
		}
	}
	var ctxMsgs struct {
		Messages []wire.Message `json:"messages"`
	}
	if code, err := lt.getJSON(ctx, fmt.Sprintf("/topics/%s/messages/%d/context?n=5", r.topic.Name, (r.topic.MaxSeq+1)/2), &ctxMsgs); err != nil || code != 200 && code != 404 {
		return "", fmt.Errorf("context %s: HTTP %d: %v", r.topic.Name, code, err)
	}
	b.WriteString("\ncontext:")
	for _, m := range ctxMsgs.Messages {
		line(m)
	}
	to := lt.sum.To.Add(time.Millisecond)
	from := time.Date(to.Year(), to.Month()-2, 1, 0, 0, 0, 0, time.UTC)
	var found struct {
		Messages []wire.Message `json:"messages"`
	}
	q := url.Values{"topic": {r.topic.Name}, "q": {"收到"}, "from": {from.Format(time.RFC3339)}, "to": {to.Format(time.RFC3339Nano)}, "limit": {"100"}}
	if code, err := lt.getJSON(ctx, "/search?"+q.Encode(), &found); err != nil || code != 200 {
		return "", fmt.Errorf("search %s: HTTP %d: %v", r.topic.Name, code, err)
	}
	b.WriteString("\nsearch:")
	for _, m := range found.Messages {
		line(m)
	}
	return b.String(), nil
}

// getJSON reads an admin path; unlike Server.Admin it returns errors, so readers off the test's
// goroutine can use it.
func (lt *legacyTenant) getJSON(ctx context.Context, path string, out any) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+lt.srv.HTTPAddr+"/admin/v1/tenants/"+lt.srv.Tenant+path, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+lt.srv.AdminKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, nil
	}
	return resp.StatusCode, json.NewDecoder(resp.Body).Decode(out)
}

func (lt *legacyTenant) views(ctx context.Context, rs []reader) (map[string]string, error) {
	out := make(map[string]string, len(rs))
	for _, r := range rs {
		v, err := lt.view(ctx, r, r.topic.MaxSeq)
		if err != nil {
			return nil, err
		}
		out[r.topic.Name] = v
	}
	return out, nil
}

// sameViews compares every reader's view with the one from before the migration.
func (lt *legacyTenant) sameViews(ctx context.Context, rs []reader, want map[string]string) error {
	got, err := lt.views(ctx, rs)
	if err != nil {
		return err
	}
	for name, v := range got {
		if v != want[name] {
			return fmt.Errorf("%s reads differently than before the migration:\nbefore %.400s\nnow    %.400s", name, want[name], v)
		}
	}
	return nil
}

func (lt *legacyTenant) waitPhase(ctx context.Context, limit time.Duration, cond func(adminapi.MigrationStatus) bool) adminapi.MigrationStatus {
	lt.srv.t.Helper()
	deadline := time.Now().Add(limit)
	for {
		st, err := lt.admin.MigrationStatus(ctx)
		if err != nil {
			lt.srv.t.Fatal(err)
		}
		if cond(st) {
			return st
		}
		if time.Now().After(deadline) {
			lt.srv.t.Fatalf("migration not there within %v: %+v", limit, st.Job)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func phase(ps ...string) func(adminapi.MigrationStatus) bool {
	return func(st adminapi.MigrationStatus) bool { return slices.Contains(ps, st.Job.Phase) }
}

// TestShard12MigrationDualReadNoDuplicatesPauseResume: a 100,000-row legacy table (IMD_MIGRATION_ROWS
// changes the size) is migrated while members keep sending to legacy topics and keep reading
// every query path; the copy pauses half way and resumes. Every read before, during and after
// the copy, and after finish, equals the first: nothing missing, nothing twice; new messages
// continue each topic's seqs without a gap, and the legacy table is kept, renamed.
func TestShard12MigrationDualReadNoDuplicatesPauseResume(t *testing.T) {
	rows := envInt(t, "IMD_MIGRATION_ROWS", 100_000)
	began := time.Now()
	lt := newLegacyTenant(t, migrationEnv(max(rows/3, 5000)), legacygen.Spec{Rows: rows, Groups: 120, Pairs: 30, MaxMembers: 5, DellogRanges: 200})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	t.Logf("%d legacy rows generated, users and groups created in %s", rows, time.Since(began).Round(time.Millisecond))
	sample := sampleTopics(lt.sum)
	rs := lt.readers(ctx, sample)
	before, err := lt.views(ctx, rs)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := lt.admin.MigrationPlan(ctx)
	if err != nil || !plan.Present || plan.Rows != int64(rows) || len(plan.Months) < 12 {
		t.Fatalf("plan %+v, %v", plan, err)
	}

	started := time.Now()
	if _, err := lt.admin.MigrationStart(ctx, false); err != nil {
		t.Fatal(err)
	}
	// Live traffic: members keep sending to a busy group and a P2P pair, and keep reading.
	live := []legacygen.Topic{sample[0], sample[4]}
	trafficCtx, stopTraffic := context.WithCancel(ctx)
	var traffic sync.WaitGroup
	acked := make([][]int64, len(live))
	trafficErrs := make(chan error, 16)
	for i, tp := range live {
		tok, err := lt.admin.Token(ctx, tp.Members[0], time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		sender := lt.srv.Connect(ctx, tok, 2)
		traffic.Go(func() {
			for n := 0; trafficCtx.Err() == nil; n++ {
				ack, err := sender.Send(trafficCtx, textMessage(tp.Name, fmt.Sprintf("live-%d", n), fmt.Sprintf("live %d", n)))
				if err != nil {
					if trafficCtx.Err() == nil {
						trafficErrs <- fmt.Errorf("send to %s: %w", tp.Name, err)
					}
					return
				}
				acked[i] = append(acked[i], ack.Seq)
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
	traffic.Go(func() {
		// Pauses between passes leave the two cores to the copy as much as to the readers.
		for ; trafficCtx.Err() == nil; time.Sleep(200 * time.Millisecond) {
			if err := lt.sameViews(trafficCtx, rs, before); err != nil && trafficCtx.Err() == nil {
				trafficErrs <- fmt.Errorf("while copying: %w", err)
				return
			}
		}
	})

	lt.waitPhase(ctx, 2*time.Minute, func(st adminapi.MigrationStatus) bool { return st.Job.Copied+st.Job.Skipped >= int64(rows)/3 })
	if _, err := lt.admin.MigrationCommand(ctx, "pause"); err != nil {
		t.Fatal(err)
	}
	paused := lt.waitPhase(ctx, 30*time.Second, phase("paused"))
	if err := lt.sameViews(ctx, rs, before); err != nil {
		t.Fatalf("paused: %v", err)
	}
	if again := lt.waitPhase(ctx, time.Second, phase("paused")); again.Job.Cursor != paused.Job.Cursor || again.Job.Remaining == 0 {
		t.Fatalf("the copy moved while paused: %+v → %+v", paused.Job, again.Job)
	}
	if _, err := lt.admin.MigrationCommand(ctx, "resume"); err != nil {
		t.Fatal(err)
	}
	done := lt.waitPhase(ctx, 3*time.Minute, phase("verified", "failed"))
	stopTraffic()
	traffic.Wait()
	close(trafficErrs)
	for err := range trafficErrs {
		t.Fatal(err)
	}
	if done.Job.Phase != "verified" || done.Job.Copied != int64(rows) || done.Job.Failed != 0 {
		t.Fatalf("migration ended %+v", done.Job)
	}
	t.Logf("start to verified in %s (paused once), %d batches, %d live messages acked", time.Since(started).Round(time.Millisecond),
		done.Job.Batches, len(acked[0])+len(acked[1]))
	if err := lt.sameViews(ctx, rs, before); err != nil {
		t.Fatalf("verified: %v", err)
	}
	if _, err := lt.admin.MigrationCommand(ctx, "finish"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // the status TTL: every read has stopped using the legacy table
	if err := lt.sameViews(ctx, rs, before); err != nil {
		t.Fatalf("finished: %v", err)
	}

	// New seqs continue each topic's legacy seqs without a gap, and read back after them.
	for i, tp := range live {
		seqs := acked[i]
		if len(seqs) == 0 || seqs[0] != tp.MaxSeq+1 || seqs[len(seqs)-1] != tp.MaxSeq+int64(len(seqs)) {
			t.Fatalf("%s: legacy max %d, acked %d seqs from %v", tp.Name, tp.MaxSeq, len(seqs), seqs[:min(3, len(seqs))])
		}
		r := reader{topic: tp, conn: rs[slices.IndexFunc(sample, func(s legacygen.Topic) bool { return s.Name == tp.Name })].conn}
		msgs, _, err := r.conn.SyncMessages(ctx, tp.Name, tp.MaxSeq, 200)
		if err != nil || len(msgs) == 0 || msgs[0].Seq != tp.MaxSeq+1 {
			t.Fatalf("sync after the legacy seqs of %s: %d messages, %v", tp.Name, len(msgs), err)
		}
	}
	db := lt.srv.TenantDB()
	for table, want := range map[string]int{"im_group_messages": 0, "im_group_messages_legacy": 1} {
		var n int
		if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?", table).Scan(&n); err != nil || n != want {
			t.Fatalf("table %s: %d (%v), want %d", table, n, err, want)
		}
	}
	if st, err := lt.admin.MigrationStatus(ctx); err != nil || st.Job.Phase != "finished" {
		t.Fatalf("status after finish %+v, %v", st.Job, err)
	}
	metrics := lt.srv.Metrics()
	if want := fmt.Sprintf(`migration_rows_total{status="copied"} %d`, rows); !strings.Contains(metrics, want) {
		t.Fatalf("metrics lack %q", want)
	}
}

// TestShard12MigrationKillMidCopyRerunAndCorruption: the process dies mid-copy; the next one
// picks the job up at its cursor; a rerun from the first row copies nothing twice; a row
// corrupted afterwards makes verification fail with a report naming topic and seq range, and
// finish is refused.
func TestShard12MigrationKillMidCopyRerunAndCorruption(t *testing.T) {
	rows := envInt(t, "IMD_MIGRATION_KILL_ROWS", 30_000)
	env := migrationEnv(rows / 3) // three seconds of copying
	lt := newLegacyTenant(t, env, legacygen.Spec{Rows: rows, Groups: 40, Pairs: 10, MaxMembers: 4})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if _, err := lt.admin.MigrationStart(ctx, false); err != nil {
		t.Fatal(err)
	}
	lt.waitPhase(ctx, time.Minute, func(st adminapi.MigrationStatus) bool { return st.Job.Batches >= 3 })
	lt.srv.Kill()

	// A second process of the same deployment takes over by itself.
	next := Start(t, Options{Tenant: lt.srv.Tenant, Env: env})
	lt.srv = next
	lt.admin = adminapi.New("http://"+next.HTTPAddr, next.AdminKey, next.Tenant, nil)
	done := lt.waitPhase(ctx, 2*time.Minute, phase("verified", "failed"))
	if done.Job.Phase != "verified" || done.Job.Copied != int64(rows) || done.Job.Skipped != 0 || done.Job.Failed != 0 {
		t.Fatalf("after the kill: %+v", done.Job)
	}
	// The process that took over counts the whole job, not only the rows it copied itself.
	for _, m := range []struct {
		s    series
		want float64
	}{
		{metric("migration_rows_total", "status", "copied"), float64(rows)},
		{metric("migration_state", "tenant", next.Tenant, "phase", "verified"), 1},
		{metric("migration_state", "tenant", next.Tenant, "phase", "copying"), 0},
	} {
		if got := next.metricValue(m.s.name, m.s.labels...); got != m.want {
			t.Errorf("%s = %v, want %v", m.s, got, m.want)
		}
	}
	if next.metricValue("migration_batch_latency_count") == 0 {
		t.Error("migration_batch_latency observed no batch")
	}
	db := next.TenantDB()
	count := func() int64 {
		var total int64
		for _, m := range done.Months {
			var n int64
			if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM im_group_messages_"+m.Month).Scan(&n); err != nil {
				t.Fatal(err)
			}
			total += n
		}
		return total
	}
	if got := count(); got != int64(rows) {
		t.Fatalf("month tables hold %d rows, the legacy table %d", got, rows)
	}

	if _, err := lt.admin.MigrationStart(ctx, true); err != nil {
		t.Fatal(err)
	}
	again := lt.waitPhase(ctx, 2*time.Minute, func(st adminapi.MigrationStatus) bool {
		return st.Job.Run == 2 && (st.Job.Phase == "verified" || st.Job.Phase == "failed")
	})
	if again.Job.Phase != "verified" || again.Job.Copied != 0 || again.Job.Skipped != int64(rows) || count() != int64(rows) {
		t.Fatalf("rerun: %+v", again.Job)
	}

	victim := lt.sum.Topics[3]
	sq := victim.MaxSeq / 2
	var created time.Time
	if err := db.QueryRowContext(ctx, "SELECT created_at FROM im_group_messages WHERE topic = ? AND seqid = ?", victim.Name, sq).Scan(&created); err != nil {
		t.Fatal(err)
	}
	mo := created.UTC().Format("200601")
	if _, err := db.ExecContext(ctx, "UPDATE im_group_messages_"+mo+` SET content = '{"text":"corrupted"}' WHERE topic = ? AND seqid = ?`, victim.Name, sq); err != nil {
		t.Fatal(err)
	}
	if _, err := lt.admin.MigrationCommand(ctx, "verify"); err != nil {
		t.Fatal(err)
	}
	failed := lt.waitPhase(ctx, time.Minute, phase("failed", "verified"))
	want := adminapi.MigrationMismatch{Topic: victim.Name, Month: mo, Kind: "differs", FromSeq: sq, ToSeq: sq, Rows: 1}
	if failed.Job.Phase != "failed" || failed.Job.Report == nil || !slices.Contains(failed.Job.Report.Mismatches, want) {
		t.Fatalf("verification of a corrupted row: %+v", failed.Job)
	}
	if got := next.metricValue("migration_verify_mismatches_total"); got == 0 {
		t.Error("migration_verify_mismatches_total did not move")
	}
	eventually(t, 10*time.Second, "migration_state{phase=failed} is 1", func() bool {
		return next.metricValue("migration_state", "tenant", next.Tenant, "phase", "failed") == 1
	})
	if _, err := lt.admin.MigrationCommand(ctx, "finish"); adminapi.CodeOf(err) != 40901 {
		t.Fatalf("finish after a mismatch: %v", err)
	}
}

// legacyIDs composes the legacy rows' msg_ids the way the server's snowflake adapter reads them.
func legacyIDs(t testing.TB) *snowflake.Generator {
	t.Helper()
	ids, err := snowflake.New(0)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}
