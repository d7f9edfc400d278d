package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/imdhq/imd/cmd/imctl/bench"
	"github.com/imdhq/imd/cmd/imctl/bench/procstat"
	"github.com/imdhq/imd/cmd/imctl/bench/report"
)

// cli runs imctl with args and an environment, returning stdout and the
// error; runBench, when set, stands in for the load generator.
type cli struct {
	env      map[string]string
	runBench func(context.Context, bench.Config) (report.Report, error)
	stdin    string
	// configDir is the user's config directory; "": none, so no config file is read.
	configDir string
	version   string
}

func (c cli) run(args ...string) (string, string, error) {
	var out, errOut bytes.Buffer
	d := deps{
		lookupEnv: func(k string) (string, bool) { v, ok := c.env[k]; return v, ok },
		stdin:     strings.NewReader(c.stdin),
		stdout:    &out,
		stderr:    &errOut,
		runBench:  c.runBench,
		version:   c.version,
	}
	if c.configDir != "" {
		d.userConfigDir = func() (string, error) { return c.configDir, nil }
	}
	root := newRootCmd(d)
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	return out.String(), errOut.String(), err
}

// adminFake answers the admin API with canned JSON and records the last
// request.
type adminFake struct {
	srv    *httptest.Server
	method string
	uri    string
	auth   string
	body   string
}

func newAdminFake(t *testing.T, answers map[string]string) *adminFake {
	f := &adminFake{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		f.method, f.uri, f.auth, f.body = r.Method, r.URL.RequestURI(), r.Header.Get("Authorization"), string(b)
		answer, ok := answers[r.Method+" "+r.URL.Path]
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"code":40401,"msg":"no such thing"}`)
			return
		}
		io.WriteString(w, answer)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

const tenantPath = "/admin/v1/tenants/acme"

func TestAdminCommands(t *testing.T) {
	answers := map[string]string{
		"POST " + tenantPath + "/users":                      `{"user_id":7}`,
		"GET " + tenantPath + "/users/7/status":              `{"user_id":7,"status":"active"}`,
		"PUT " + tenantPath + "/users/7/status":              `{"user_id":7,"status":"disabled"}`,
		"DELETE " + tenantPath + "/users/7":                  `{"user_id":7,"status":"deleted"}`,
		"POST " + tenantPath + "/tokens":                     `{"token":"tok.en"}`,
		"POST " + tenantPath + "/friendships":                `{}`,
		"POST " + tenantPath + "/groups":                     `{"group_id":5,"topic":"grp_5","conversation_id":99}`,
		"POST " + tenantPath + "/groups/5/members":           `{}`,
		"GET " + tenantPath + "/shards":                      `{"shards":[{"shard_month":"202611","table_name":"im_group_messages_202611","status":"writable","row_count":3,"min_created_at":0,"max_created_at":0,"updated_at":0}]}`,
		"POST " + tenantPath + "/shards/advance":             `{"active_month":"202612"}`,
		"POST " + tenantPath + "/topics/grp_5/route/rebuild": `{"topic":"grp_5","segments":[{"month":"202611","min_seq":1,"max_seq":3,"count":3}]}`,
		"GET " + tenantPath + "/topics/grp_5/messages":       `{"messages":[{"seq":2,"msg_id":12,"from":7,"type":"text","status":"normal","content":{"text":"second"}},{"seq":1,"msg_id":11,"from":7,"type":"image","status":"normal","content":{"key":"k"}}],"last_seq":3,"has_more":true}`,
		"GET " + tenantPath + "/topics/grp_5/messages/2":     `{"seq":2,"msg_id":12,"from":7,"type":"text","status":"recalled","content":{}}`,
	}
	tests := []struct {
		name    string
		args    []string
		wantReq string // method, URI and body
		wantOut []string
	}{
		{"user create", []string{"user", "create", "7", "--nickname", "ann"}, `POST /users {"user_id":7,"nickname":"ann"}`, []string{"created user 7\n"}},
		{"user create JSON", []string{"user", "create", "7", "--json"}, `POST /users {"user_id":7}`, []string{"{\n  \"user_id\": 7\n}\n"}},
		{"user status", []string{"user", "status", "7"}, `GET /users/7/status `, []string{"user 7 is active\n"}},
		{"user disable", []string{"user", "disable", "7"}, `PUT /users/7/status {"status":"disabled"}`, []string{"user 7 is disabled\n"}},
		{"user enable", []string{"user", "enable", "7"}, `PUT /users/7/status {"status":"active"}`, nil},
		{"user delete JSON", []string{"user", "delete", "7", "--json"}, `DELETE /users/7 `, []string{`"status": "deleted"`}},
		{"token", []string{"token", "7", "--ttl", "2h"}, `POST /tokens {"user_id":7,"ttl_seconds":7200}`, []string{"tok.en\n"}},
		{"token JSON", []string{"token", "7", "--json"}, `POST /tokens {"user_id":7}`, []string{`"token": "tok.en"`}},
		{"friend", []string{"friend", "7", "8"}, `POST /friendships {"user_a":7,"user_b":8}`, []string{"7 and 8 are friends\n"}},
		{"group create", []string{"group", "create", "5", "--owner", "7", "--members", "8, 9"}, `POST /groups {"group_id":5,"owner":7,"members":[8,9]}`,
			[]string{"GROUP_ID  TOPIC  CONVERSATION_ID\n5         grp_5  99\n"}},
		{"group add", []string{"group", "add", "5", "10,11"}, `POST /groups/5/members {"user_ids":[10,11]}`, []string{"added 2 members to group 5\n"}},
		{"shards", []string{"shards"}, `GET /shards `, []string{"MONTH   TABLE                     STATUS    ROWS", "202611  im_group_messages_202611  writable  3     -"}},
		{"shards JSON", []string{"shards", "--json"}, `GET /shards `, []string{`"shard_month": "202611"`}},
		{"shards advance", []string{"shards", "advance", "202612"}, `POST /shards/advance {"month":"202612"}`, []string{"active month: 202612\n"}},
		{"route rebuild", []string{"route", "rebuild", "grp_5"}, `POST /topics/grp_5/route/rebuild `, []string{"rebuilt the route of grp_5\n", "202611  1        3        3"}},
		{"messages newest", []string{"messages", "grp_5", "--limit", "2"}, `GET /topics/grp_5/messages?limit=2 `,
			[]string{"SEQ  MSG_ID  FROM  TYPE   STATUS  CREATED  CONTENT", "2    12      7     text   normal  -        second", `<image> {"key":"k"}`, "(more: --since 1)"}},
		{"messages before", []string{"messages", "grp_5", "--before", "9"}, `GET /topics/grp_5/messages?before=9 `, nil},
		{"messages since 0", []string{"messages", "grp_5", "--since", "0"}, `GET /topics/grp_5/messages?since=0 `, nil},
		{"message", []string{"message", "grp_5", "2"}, `GET /topics/grp_5/messages/2 `, []string{"(recalled)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newAdminFake(t, answers)
			c := cli{env: map[string]string{"IMCTL_HTTP": f.srv.URL, "IMCTL_TENANT": "acme"}}
			out, _, err := c.run(tt.args...)
			if err != nil {
				t.Fatal(err)
			}
			if got := f.method + " " + strings.TrimPrefix(f.uri, tenantPath) + " " + f.body; got != tt.wantReq {
				t.Errorf("request %q, want %q", got, tt.wantReq)
			}
			if f.auth != "Bearer dev-admin-key" {
				t.Errorf("auth %q", f.auth)
			}
			for _, w := range tt.wantOut {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

func TestAdminErrorsAndBadArgs(t *testing.T) {
	f := newAdminFake(t, map[string]string{})
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"message", "grp_1", "1"}, "HTTP 404: code 40401: no such thing"},
		{[]string{"user", "create", "x"}, `user id "x": want a positive integer`},
		{[]string{"user", "create", "0"}, "want a positive integer"},
		{[]string{"friend", "1"}, "accepts 2 arg(s)"},
		{[]string{"friend", "1", "y"}, `user B "y"`},
		{[]string{"group", "create", "5"}, `required flag(s) "owner" not set`},
		{[]string{"group", "create", "5", "--owner", "1", "--members", "2,z"}, `user id "z"`},
		{[]string{"group", "add", "5", ","}, "no user ids given"},
		{[]string{"messages", "grp_1", "--before", "3", "--since", "1"}, "none of the others can be"},
		{[]string{"message", "grp_1", "-1"}, "unknown shorthand flag"},
		{[]string{"token", "1", "--ttl", "soon"}, "invalid argument"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			_, _, err := cli{env: map[string]string{"IMCTL_HTTP": f.srv.URL}}.run(tt.args...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

// TestVersion: --version names the build and needs no running imd.
func TestVersion(t *testing.T) {
	out, _, err := cli{version: "v1.4.0 (revision 850f25f) go1.26.8"}.run("--version")
	if err != nil || out != "imctl v1.4.0 (revision 850f25f) go1.26.8\n" {
		t.Fatalf("--version: %v %q", err, out)
	}
}

func TestGlobalFlagsAndEnvironment(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		args    []string
		want    func(bench.Config) string // "" when right
		wantErr string
	}{
		{
			name: "defaults",
			want: func(c bench.Config) string {
				if c.Dial.Addr != "127.0.0.1:9000" || c.Dial.TLS != nil || c.Dial.ProxyHeader != 0 || c.Admin.Tenant() != "default" {
					return "defaults differ"
				}
				return ""
			},
		},
		{
			name: "environment fills what flags do not set",
			env:  map[string]string{"IMCTL_TCP": "10.9.9.9:1", "IMCTL_TENANT": "envt", "IMCTL_TLS": "true", "IMCTL_SNI": "im.example", "IMCTL_INSECURE": "1", "IMCTL_PROXY": "2"},
			args: []string{"--tenant", "flagt"},
			want: func(c bench.Config) string {
				if c.Dial.Addr != "10.9.9.9:1" || c.Admin.Tenant() != "flagt" || c.Dial.ProxyHeader != 2 ||
					c.Dial.TLS == nil || c.Dial.TLS.ServerName != "im.example" || !c.Dial.TLS.InsecureSkipVerify {
					return "environment not applied"
				}
				return ""
			},
		},
		{name: "bad proxy flag", args: []string{"--proxy", "3"}, wantErr: "--proxy must be 0, 1 or 2"},
		{name: "bad proxy env", env: map[string]string{"IMCTL_PROXY": "two"}, wantErr: `IMCTL_PROXY="two"`},
		{name: "bad bool env", env: map[string]string{"IMCTL_TLS": "maybe"}, wantErr: "IMCTL_TLS"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got bench.Config
			c := cli{env: tt.env, runBench: func(_ context.Context, cfg bench.Config) (report.Report, error) {
				got = cfg
				return report.Report{Pass: true}, nil
			}}
			_, _, err := c.run(append(tt.args, "bench", "w1", "--users", "2")...)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if msg := tt.want(got); msg != "" {
				t.Fatalf("%s: %+v", msg, got)
			}
		})
	}
}

func TestBenchFlags(t *testing.T) {
	tests := []struct {
		args    []string
		check   func(c bench.Config) bool
		wantErr string
	}{
		{[]string{"w1"}, func(c bench.Config) bool {
			return c.Workload == "w1" && c.Users == 1000 && c.Duration == 10*time.Second && c.Warmup == 2*time.Second &&
				c.Parallel == 64 && c.SyncMax == 200_000 && c.SourceIPs == nil && c.Targets == nil && c.Status != nil && !c.Live
		}, ""},
		{[]string{"w1", "--users", "100", "--duration", "30s", "--warmup", "0s", "--source-ips", "127.0.0.2,127.0.0.3", "--pids", "imd=12,redis=34"},
			func(c bench.Config) bool {
				return c.Users == 100 && c.Duration == 30*time.Second && c.Warmup == 0 && len(c.SourceIPs) == 2 && c.SourceIPs[1] == "127.0.0.3" &&
					len(c.Targets) == 2 && c.Targets[1].Name == "redis" && c.Targets[1].PID == 34
			}, ""},
		{[]string{"w2", "--group-size", "5"}, func(c bench.Config) bool { return c.Workload == "w2" && c.Users == 1000 && c.GroupSize == 5 }, ""},
		{[]string{"w3", "--members", "10000", "--rate", "20"}, func(c bench.Config) bool { return c.Members == 10000 && c.Rate == 20 }, ""},
		{[]string{"w4", "--conns", "50000"}, func(c bench.Config) bool {
			return c.Conns == 50000 && c.Users == 1000 && c.Heartbeat == 30*time.Second
		}, ""},
		{[]string{"w5"}, func(c bench.Config) bool { return c.Users == 4 && c.Messages == 500 && c.PageSize == 50 }, ""},
		{[]string{"t1"}, func(c bench.Config) bool { return c.Workload == "t1" && c.Groups == 20 && c.GroupSize == 10 }, ""},
		{[]string{"t2"}, func(c bench.Config) bool { return c.Workload == "t2" && c.Members == 100 && c.Publishers == 50 }, ""},
		{[]string{"t2", "--members", "10", "--publishers", "3"}, func(c bench.Config) bool { return c.Members == 10 && c.Publishers == 3 }, ""},
		{[]string{"w1", "--imd-cpuprofile", "/nonexistent/dir/p"}, func(c bench.Config) bool {
			return c.ServerProfile != nil && c.ServerProfile(context.Background(), time.Second) != nil
		}, ""},
		{[]string{"w1"}, func(c bench.Config) bool { return c.ServerProfile == nil }, ""},
		{[]string{"t1", "--users", "5"}, nil, "unknown flag: --users"},
		{[]string{"seed", "--months", "0", "--dsn", "u:p@tcp(127.0.0.1:1)/"}, nil, "--months must be in"},
		{[]string{"seed"}, nil, "--dsn is required"},
		{[]string{"w3", "--users", "5"}, nil, "unknown flag: --users"},
		{[]string{"w1", "--pids", "imd"}, nil, "--pids"},
		{[]string{"w1", "--duration", "forever"}, nil, "invalid argument"},
		{[]string{"w1", "extra"}, nil, "unknown command"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var got bench.Config
			c := cli{runBench: func(_ context.Context, cfg bench.Config) (report.Report, error) {
				got = cfg
				return report.Report{Pass: true}, nil
			}}
			_, _, err := c.run(append([]string{"bench"}, tt.args...)...)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tt.check(got) {
				t.Fatalf("config %+v", got)
			}
		})
	}
}

func TestBenchReportsAndExitStatus(t *testing.T) {
	dir := t.TempDir()
	jsonPath, mdPath := filepath.Join(dir, "r.json"), filepath.Join(dir, "r.md")
	tests := []struct {
		name    string
		rep     report.Report
		wantErr string
	}{
		{"pass", report.Report{Workload: "w1", Pass: true}, ""},
		{"failed verification", report.Report{Workload: "w1", Problems: []string{"3 duplicate deliveries"}}, "bench w1 failed verification: 3 duplicate deliveries"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cli{runBench: func(context.Context, bench.Config) (report.Report, error) { return tt.rep, nil }}
			out, _, err := c.run("bench", "w1", "--json", jsonPath, "--md", mdPath)
			if (tt.wantErr == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
			if !strings.Contains(out, "## imd bench w1") {
				t.Errorf("stdout lacks the markdown report:\n%s", out)
			}
			var back report.Report
			if b, err := os.ReadFile(jsonPath); err != nil || json.Unmarshal(b, &back) != nil || back.Pass != tt.rep.Pass {
				t.Errorf("JSON report: %v %+v", err, back)
			}
			if b, err := os.ReadFile(mdPath); err != nil || !strings.Contains(string(b), "| result |") {
				t.Errorf("markdown report: %v %s", err, b)
			}
		})
	}
	c := cli{runBench: func(context.Context, bench.Config) (report.Report, error) { return report.Report{Pass: true}, nil }}
	if _, _, err := c.run("bench", "w1", "--json", filepath.Join(dir, "missing", "r.json")); err == nil {
		t.Fatal("an unwritable report path went unnoticed")
	}
}

func TestBenchSummary(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	for _, r := range []report.Report{{Workload: "w1", Pass: true, AckedPerSec: 1234}, {Workload: "w3", Problems: []string{"2 duplicate deliveries"}}} {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, r.Workload+".json")
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, path)
	}
	mdPath := filepath.Join(dir, "summary.md")
	out, _, err := (cli{}).run(append([]string{"bench", "summary", "--md", mdPath}, paths...)...)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| w1 |  | PASS | 1,234 |", "| w3 |  | FAIL: 2 duplicate deliveries |"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	if b, err := os.ReadFile(mdPath); err != nil || string(b) != out {
		t.Errorf("--md file = %q, %v; want what was printed", b, err)
	}
	if _, _, err := (cli{}).run("bench", "summary", filepath.Join(dir, "none.json")); err == nil {
		t.Error("a missing report went unnoticed")
	}
}

func TestChatFlags(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"chat", "--topic", "grp_1"}, "at least one of the flags in the group [token user] is required"},
		{[]string{"chat", "--token", "t"}, "at least one of the flags in the group [topic to] is required"},
		{[]string{"chat", "--token", "t", "--user", "1", "--topic", "grp_1"}, "none of the others can be"},
		{[]string{"chat", "--token", "t", "--topic", "grp_1", "--to", "2"}, "none of the others can be"},
		{[]string{"chat", "--token", "t", "--topic", "grp_1", "--tcp", "127.0.0.1:1"}, "connection refused"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			if _, _, err := (cli{}).run(tt.args...); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

// TestBenchStages: the command reads a CPU profile (here imctl's own, a real one) and, with
// the run's report, prints the stages in µs per ACKed message.
func TestBenchStages(t *testing.T) {
	dir := t.TempDir()
	prof := filepath.Join(dir, "cpu.pprof")
	stop, err := profileCPU(prof)
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(50 * time.Millisecond); time.Now().Before(deadline); {
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	rep := report.Report{Workload: "w1", Acked: 1000, AckedPerSec: 100,
		Window: []procstat.Usage{{Target: procstat.Target{Name: "imd", PID: 1}, CPUSeconds: 0.4, CPUCores: 0.04}}}
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	repPath, mdPath := filepath.Join(dir, "w1.json"), filepath.Join(dir, "w1.stages.md")
	if err := os.WriteFile(repPath, b, 0o600); err != nil {
		t.Fatal(err)
	}
	out, _, err := (cli{}).run("bench", "stages", "--report", repPath, "--md", mdPath, prof)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## imd CPU by stage — w1, 100 ACKed msg/s", "imd 400 µs of CPU per ACKed message", "| stage | share | µs per ACKed msg |", "| other |"} {
		if !strings.Contains(out, want) {
			t.Errorf("stages lack %q:\n%s", want, out)
		}
	}
	if md, err := os.ReadFile(mdPath); err != nil || string(md) != out {
		t.Errorf("--md file = %q, %v; want what was printed", md, err)
	}
	for _, args := range [][]string{
		{"bench", "stages", filepath.Join(dir, "none.pprof")},
		{"bench", "stages", repPath}, // not a profile
		{"bench", "stages", "--report", filepath.Join(dir, "none.json"), prof},
	} {
		if _, _, err := (cli{}).run(args...); err == nil {
			t.Errorf("%q: no error", args)
		}
	}
}
