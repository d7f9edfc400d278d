package e2e

// The operator console (adapters/http/console) driven in a real headless Chromium against the
// real binary: an operator who never used imctl signs in, runs a migration, a month switch
// and a route repair from the browser. Screenshots go to $IMD_ARTIFACTS_DIR (default
// .run/artifacts, ignored by git).

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/imdhq/imd/adapters/mysql/legacygen"
)

// chromiumPath is the browser deploy/local/browser.sh installed; required when the suite runs
// with its services (IMD_REQUIRE_SERVICES=1), else the test skips without it.
func chromiumPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("IMD_TEST_CHROMIUM"); p != "" {
		return p
	}
	p, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("IMD_REQUIRE_SERVICES") == "1" {
			t.Fatal("chromium not found: run `bash deploy/local/browser.sh up` (go tool task test does)")
		}
		t.Skip("chromium not installed; run `go tool task test`")
	}
	return p
}

// browser is one headless Chromium tab, with the test's screenshot directory.
type browser struct {
	t         *testing.T
	ctx       context.Context
	artifacts string
	shots     int
}

// signedInConsole opens srv's console in a fresh browser and signs in with the admin key.
func signedInConsole(t *testing.T, srv *Server) *browser {
	t.Helper()
	b := newBrowser(t)
	b.do(chromedp.Navigate("http://" + srv.HTTPAddr + "/console/"))
	b.waitFor("the sign-in form", "!document.getElementById('signin').hidden", 30*time.Second)
	b.submit("signin", map[string]string{"admin-key": srv.AdminKey})
	b.waitFor("the console", "!document.getElementById('app').hidden", 30*time.Second)
	return b
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	exe := chromiumPath(t)
	dir := os.Getenv("IMD_ARTIFACTS_DIR")
	if dir == "" {
		dir = filepath.Join(repoRoot(), ".run", "artifacts")
	}
	dir = filepath.Join(dir, t.Name()+"-"+time.Now().UTC().Format("20060102T150405"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1400, 1000),
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-component-update", true),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	t.Cleanup(func() { cancelTab(); cancelAlloc() })
	// The first run starts the browser; it must not run under a timeout (see chromedp.Run).
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	t.Logf("screenshots in %s", dir)
	return &browser{t: t, ctx: ctx, artifacts: dir}
}

func (b *browser) do(steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.shot("failed")
		b.t.Fatal(err)
	}
}

func jsString(s string) string {
	q, _ := json.Marshal(s)
	return string(q)
}

// eval runs a JavaScript expression in the page and decodes its value.
func eval[T any](b *browser, expr string, opts ...chromedp.EvaluateOption) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, opts...))
	if err != nil {
		b.t.Fatalf("%s: %v", expr, err)
	}
	return v
}

// text is the text of the element selected by css ("" when absent).
func (b *browser) text(css string) string {
	b.t.Helper()
	return eval[string](b, "(document.querySelector("+jsString(css)+")||{}).textContent||''")
}

// waitFor waits until the JavaScript predicate holds: the page updates itself by polling, so
// this waits for the page, never a fixed time.
func (b *browser) waitFor(what, predicate string, limit time.Duration) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, limit+10*time.Second)
	defer cancel()
	_, err := chromedp.Run(ctx, chromedp.Poll[bool](predicate,
		chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(limit)))
	if err != nil {
		b.shot("timeout")
		b.t.Fatalf("waiting for %s (%s): %v; page says %q / %q", what, predicate, err, b.text("#flash"), b.text("main"))
	}
}

// waitText waits until the element selected by css contains want.
func (b *browser) waitText(css, want string, limit time.Duration) {
	b.t.Helper()
	b.waitFor(fmt.Sprintf("%s to contain %q", css, want),
		"((document.querySelector("+jsString(css)+")||{}).textContent||'').includes("+jsString(want)+")", limit)
}

// submit fills a form's fields (input id → value) and submits it.
func (b *browser) submit(formID string, fields map[string]string) {
	b.t.Helper()
	var steps []chromedp.Action[chromedp.Void]
	for id, v := range fields {
		steps = append(steps, chromedp.SetValue(chromedp.CSS("#"+id), v))
	}
	b.do(append(steps, chromedp.Click(chromedp.CSS("#"+formID+"-submit")))...)
}

func (b *browser) click(css string) {
	b.t.Helper()
	b.do(chromedp.Click(chromedp.CSS(css)))
}

// open switches the console to a page and waits for its first numbers.
func (b *browser) open(page, ready string) {
	b.t.Helper()
	b.click("#nav-" + page)
	b.waitFor(page+" page", "!!document.querySelector("+jsString(ready)+")", 30*time.Second)
}

// shot keeps a full-page screenshot as a test artifact.
func (b *browser) shot(name string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Logf("screenshot %s: %v", name, err)
		return
	}
	b.shots++
	path := filepath.Join(b.artifacts, fmt.Sprintf("%02d-%s.png", b.shots, name))
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Logf("screenshot %s: %v", name, err)
	}
}

// rowStatus is the "Status" cell of the shards table's row for month ("" when absent).
func (b *browser) rowStatus(month string) string {
	b.t.Helper()
	return eval[string](b, `(() => {
		for (const tr of document.querySelectorAll('#shards-table tbody tr')) {
			if (tr.cells[0] && tr.cells[0].textContent === `+jsString(month)+`) return tr.cells[2].textContent;
		}
		return '';
	})()`)
}

func TestConsoleOperatorRunsMigrationMonthSwitchAndRouteRepairInABrowser(t *testing.T) {
	const rows = 12000
	// The copy is throttled to a few seconds, so the operator can pause it in the middle.
	lt := newLegacyTenant(t, migrationEnv(1000), legacygen.Spec{Rows: rows, Groups: 12, Pairs: 4, MaxMembers: 3})
	srv := lt.srv
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const nickname = `<img src=x id=pwn onerror="window.pwned=1">Eve</b>`
	if err := lt.admin.CreateUser(ctx, 990001, nickname); err != nil {
		t.Fatal(err)
	}

	b := newBrowser(t)
	b.do(chromedp.Navigate("http://" + srv.HTTPAddr + "/console/"))
	b.waitFor("the sign-in form", "!document.getElementById('signin').hidden", 30*time.Second)

	// A wrong key is refused with the API's code and message, and opens nothing.
	b.submit("signin", map[string]string{"admin-key": "not-the-admin-key"})
	b.waitText("#signin-result", "40101", 30*time.Second)
	b.shot("wrong-key-refused")
	if eval[bool](b, "!document.getElementById('app').hidden") {
		t.Fatal("the console opened with a wrong key")
	}

	// Sign in; the session cookie is out of the page's reach (HttpOnly).
	b.submit("signin", map[string]string{"admin-key": srv.AdminKey})
	b.waitFor("the console", "!document.getElementById('app').hidden", 30*time.Second)
	if c := eval[string](b, "document.cookie"); strings.Contains(c, "imd_console") {
		t.Fatalf("the session cookie is readable by scripts: %q", c)
	}

	// The tenant's shards: this month's table is there and writable.
	b.waitText("#shards-table", Month(0), 30*time.Second)
	if st := b.rowStatus(Month(0)); st != "writable" {
		t.Fatalf("month %s shows status %q, want writable", Month(0), st)
	}
	b.shot("shards")

	// The migration: plan, start, pause half way, resume, verify runs by itself, finish.
	b.open("migration", "#migration-phase[data-phase]")
	b.click("#migration-plan-button")
	b.waitText("#migration-result", fmt.Sprintf("%d legacy rows", rows), time.Minute)
	b.click("#migration-start")
	b.waitText("#migration-result", "start: phase copying", time.Minute)
	b.waitFor("copied rows", "document.querySelector('#migration-progress').value > 0", time.Minute)
	b.click("#migration-pause")
	b.waitText("#migration-result", "pause: phase paused", time.Minute)
	b.waitFor("the paused phase", "document.querySelector('#migration-phase').dataset.phase === 'paused'", 30*time.Second)
	b.shot("migration-paused")
	paused, err := lt.admin.MigrationStatus(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if paused.Job.Phase != "paused" || paused.Job.Copied == 0 || paused.Job.Remaining == 0 {
		t.Fatalf("after the console's pause the job is %+v, want paused half way", paused.Job)
	}
	b.click("#migration-resume")
	b.waitText("#migration-result", "resume: phase copying", time.Minute)
	b.waitFor("the verified phase", "document.querySelector('#migration-phase').dataset.phase === 'verified'", 3*time.Minute)
	b.waitText("#migration-speed", fmt.Sprintf("%s / %s rows", fmtCount(rows), fmtCount(rows)), 30*time.Second)
	b.shot("migration-verified")
	b.click("#migration-finish")
	b.click("#migration-result .confirm-yes")
	b.waitText("#migration-result", "finish: phase finished", time.Minute)
	b.shot("migration-finished")
	if st, err := lt.admin.MigrationStatus(ctx); err != nil || st.Job.Phase != "finished" {
		t.Fatalf("after the console's finish: %+v, %v", st.Job, err)
	}

	// A month switch: a bad month shows the API's error; the next month, once confirmed,
	// becomes writable in the catalog the page shows.
	b.open("shards", "#shards-table tbody")
	b.submit("advance", map[string]string{"advance-month": "2026-13"})
	b.click("#advance-result .confirm-yes")
	b.waitText("#advance-result", "40001", 30*time.Second)
	b.submit("advance", map[string]string{"advance-month": Month(1)})
	b.waitText("#advance-result", "Make "+Month(1)+" the active month", 30*time.Second)
	b.click("#advance-result .confirm-yes")
	b.waitText("#advance-result", "active month is now "+Month(1), time.Minute)
	b.waitFor("the new month in the catalog",
		"[...document.querySelectorAll('#shards-table tbody tr')].some(tr => tr.cells[0].textContent === "+jsString(Month(1))+" && tr.cells[2].textContent === 'writable')",
		time.Minute)
	if st := b.rowStatus(Month(0)); st == "writable" {
		t.Fatalf("month %s still shows writable after the switch", Month(0))
	}
	b.shot("month-advanced")
	if got := srv.ActiveMonth(srv.Redis()); got != Month(1) {
		t.Fatalf("active month in Redis = %s after the console's switch, want %s", got, Month(1))
	}

	// A route repair: a migrated topic loses its Redis route; the console rebuilds it from
	// the mirror and shows its month segments.
	topic := lt.sum.Topics[0].Name
	rc := srv.Redis()
	routeKey := srv.topicKeys(topic).Route(topic)
	if err := rc.Do(ctx, rc.B().Del().Key(routeKey).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	b.open("routes", "#compensation-table tbody")
	b.submit("rebuild-topic", map[string]string{"rebuild-topic-topic": topic})
	b.waitText("#rebuild-topic-result", "route of "+topic+" rebuilt", time.Minute)
	b.waitFor("the route's segments", "document.querySelectorAll('#route-segments tbody tr').length > 0", 30*time.Second)
	if n, err := rc.Do(ctx, rc.B().Zcard().Key(routeKey).Build()).AsInt64(); err != nil || n == 0 {
		t.Fatalf("route of %s after the console's rebuild: %d months (%v)", topic, n, err)
	}
	// A topic with markup in it is refused by the API, and the refusal shows as text.
	b.submit("rebuild-topic", map[string]string{"rebuild-topic-topic": "<b id=bold>x</b>"})
	b.waitText("#rebuild-topic-result", "40001", 30*time.Second)
	b.waitText("#repair-backlog", "0 queued", 30*time.Second)
	b.click("#repair-drain")
	b.waitText("#repair-drain-result", "route(s) repaired", 30*time.Second)
	b.click("#rebuild-tenant")
	b.click("#rebuild-tenant-result .confirm-yes")
	b.waitText("#rebuild-tenant-result", "topic route(s) rebuilt", time.Minute)
	b.shot("routes-rebuilt")

	// Message lookup and a nickname with markup: both render as text, no script runs.
	b.open("messages", "#lookup")
	b.submit("lookup", map[string]string{"lookup-topic": topic, "lookup-seq": "1"})
	b.waitText("#lookup-result", "found", 30*time.Second)
	b.submit("search", map[string]string{"search-topic": topic, "search-from": "yesterday"})
	b.waitText("#search-result", "40001", 30*time.Second)
	b.submit("search", map[string]string{"search-topic": topic, "search-from": fmt.Sprint(time.Now().AddDate(0, -2, 0).UnixMilli())})
	b.waitText("#search-result", "message(s)", 30*time.Second)
	b.waitFor("search hits", "document.querySelectorAll('#search-table tbody tr td.num').length > 0", 30*time.Second)
	b.submit("user", map[string]string{"user-user_id": "990001"})
	b.waitText("#user-table", nickname, 30*time.Second)
	b.submit("lookup", map[string]string{"lookup-topic": "grp_<script>", "lookup-seq": "1"})
	b.waitText("#lookup-result", "40001", 30*time.Second)
	b.shot("markup-as-text")
	if eval[bool](b, "!!document.getElementById('pwn') || !!document.getElementById('bold') || window.pwned === 1") {
		t.Fatal("markup from data became elements or ran")
	}

	// Delivery: a dead letter shows up on the page, and the console puts it back on its queue.
	tp := lt.sum.Topics[0]
	deadJob := fmt.Sprintf(`{"tenant":%q,"kind":"read","msg_id":1,"topic":%q,"from":%d,"recipients":[%d],"attempts":5,"queued_at":%d}`,
		srv.Tenant, tp.Name, tp.Members[0], tp.Members[0], time.Now().UnixMilli())
	if err := rc.Do(ctx, rc.B().Rpush().Key(srv.Keys().DeliverDead(0)).Element(deadJob).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	b.open("delivery", "#delivery-table tbody")
	b.waitText("#delivery-dead", "Dead letters: 1", 30*time.Second)
	b.submit("requeue", map[string]string{"requeue-max": "0"})
	b.click("#requeue-result .confirm-yes")
	b.waitText("#requeue-result", "40001", 30*time.Second)
	b.submit("requeue", map[string]string{"requeue-max": "10"})
	b.click("#requeue-result .confirm-yes")
	b.waitText("#requeue-result", "1 dead letter(s) requeued", 30*time.Second)
	b.shot("delivery")

	// Archive: the oldest migrated month, sealed, is archived from the page and its manifest
	// read back.
	b.open("archive", "#archive-table tbody tr")
	first := eval[string](b, "document.querySelector('#archive-table tbody tr').cells[0].textContent")
	if st := eval[string](b, "document.querySelector('#archive-table tbody tr').cells[1].textContent"); st != "sealed" {
		t.Fatalf("oldest month %s is %q, want sealed", first, st)
	}
	b.click("#archive-archive-" + first)
	b.click("#archive-result .confirm-yes")
	b.waitText("#archive-result", "archive "+first+": done", 2*time.Minute)
	b.click("#archive-manifest-" + first)
	b.waitText("#archive-result", "manifest of "+first, 30*time.Second)
	if m := b.text("#archive-manifest"); !strings.Contains(m, first) {
		t.Fatalf("manifest of %s shows %q", first, m)
	}
	b.waitFor("the archived state", "[...document.querySelectorAll('#archive-table tbody tr')].some(tr => tr.cells[0].textContent === "+
		jsString(first)+" && tr.cells[1].textContent === 'archived')", time.Minute)
	if f := b.text("#flash"); f != "" {
		t.Errorf("archive page: %s", f)
	}
	b.shot("archived")

	// Tenants: the list shows this tenant; a bad name is refused with the API's error.
	b.open("tenants", "#tenants-table tbody")
	b.waitText("#tenants-table", srv.Tenant, 30*time.Second)
	b.submit("provision", map[string]string{"provision-tenant": "Not A Tenant"})
	b.waitText("#provision-result", "40001", 30*time.Second)
	b.shot("tenants")

	// Signing out ends the session: the admin API refuses the old cookie.
	b.click("#signout")
	b.waitFor("the sign-in form again", "!document.getElementById('signin').hidden", 30*time.Second)
	status := eval[float64](b, "fetch('/admin/v1/tenants').then(r => r.status)", chromedp.EvalAwaitPromise)
	if status != 401 {
		t.Fatalf("after sign-out the admin API answered %v, want 401", status)
	}
}

// fmtCount spells n as the page does (en-US grouping).
func fmtCount(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// Behind Nginx (TLS terminated there, as in production) the console is served on api.<domain>
// and its session cookie is Secure; plain HTTP straight to imd gets no Secure flag, which a
// browser would refuse to send back over HTTP anyway.
func TestConsoleThroughNginxSetsASecureSessionCookie(t *testing.T) {
	RequireNginx(t)
	srv := Start(t, Options{Env: proxiedEnv})
	ngx := StartNginx(t, NginxOptions{Mode: "off", IMDTCP: srv.TCPAddr, IMDHTTP: srv.HTTPAddr})
	hc := ngx.HTTPClient(clientIP)
	base := "https://" + ngx.APIName()

	resp, err := hc.Get(base + "/console/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(resp.Header.Get("Content-Security-Policy"), "script-src 'self'") {
		t.Fatalf("GET /console/ via Nginx: HTTP %d, CSP %q", resp.StatusCode, resp.Header.Get("Content-Security-Policy"))
	}
	signIn := func(hc *http.Client, url string) *http.Cookie {
		t.Helper()
		resp, err := hc.Post(url+"/console/session", "application/json", strings.NewReader(`{"admin_key":"`+srv.AdminKey+`"}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		for _, c := range resp.Cookies() {
			if c.Name == "imd_console" && resp.StatusCode == http.StatusOK {
				return c
			}
		}
		t.Fatalf("sign in via %s: HTTP %d, no session cookie", url, resp.StatusCode)
		return nil
	}
	if c := signIn(hc, base); !c.Secure || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode {
		t.Fatalf("cookie via Nginx = %+v; want Secure, HttpOnly, SameSite=Strict", c)
	}
	if c := signIn(http.DefaultClient, "http://"+srv.HTTPAddr); c.Secure {
		t.Fatalf("cookie over plain HTTP is Secure: %+v", c)
	}
}
