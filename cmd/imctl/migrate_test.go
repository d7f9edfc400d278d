package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/imdhq/imd/cmd/imctl/adminapi"
	"github.com/imdhq/imd/cmd/imctl/adminapi/adminapitest"
	"github.com/imdhq/imd/cmd/imctl/progress"
)

const (
	migrationJob    = `{"phase":"copying","cutover_at":1790000000000,"run":1,"rows":1000,"topics":3,"copied":400,"skipped":0,"failed":0,"remaining":600,"batches":2}`
	migrationStatus = `{"job":{"phase":"verified","run":1,"rows":1000,"copied":1000,"report":{"months":["202601"],"topic_months":3,"rows":1000,"at":1790000000000}},` +
		`"months":[{"month":"202601","rows":1000,"topics":3,"copied":1000,"done":1000,"verified":"ok"}],"rows_per_second":0,"eta_seconds":0}`
	migrationFailed = `{"job":{"phase":"failed","run":1,"rows":10,"copied":10,"error":"1 mismatching ranges; grp_1 202601 seq 4-4: differs (1 rows)",` +
		`"report":{"rows":10,"mismatches":[{"topic":"grp_1","month":"202601","kind":"differs","from_seq":4,"to_seq":4,"rows":1}]}},"months":[]}`
)

func TestMigrateCommands(t *testing.T) {
	answers := map[string]string{
		"GET " + tenantPath + "/migration/plan": `{"present":true,"phase":"none","rows":1000,"topics":3,"cursor_index":false,` +
			`"months":[{"month":"202601","rows":1000,"topics":3,"min_created_at":0,"max_created_at":0,"table_state":""}]}`,
		"GET " + tenantPath + "/migration/status":  migrationStatus,
		"POST " + tenantPath + "/migration/start":  migrationJob,
		"POST " + tenantPath + "/migration/pause":  migrationJob,
		"POST " + tenantPath + "/migration/finish": migrationJob,
	}
	tests := []struct {
		name    string
		args    []string
		wantReq string
		wantOut []string
	}{
		{"plan", []string{"migrate", "plan"}, "GET /migration/plan ",
			[]string{"legacy table: 1000 rows, 3 topics, 1 months", "202601  1000  3", "(created by start)", "start adds the index"}},
		{"start", []string{"migrate", "start"}, `POST /migration/start {}`, []string{"migration copying (run 1)", "400 of 1000 rows handled"}},
		{"rerun", []string{"migrate", "start", "--rerun"}, `POST /migration/start {"rerun":true}`, nil},
		{"pause", []string{"migrate", "pause"}, "POST /migration/pause ", []string{"migration copying"}},
		{"finish JSON", []string{"migrate", "finish", "--json"}, "POST /migration/finish ", []string{`"phase": "copying"`}},
		{"status", []string{"migrate", "status"}, "GET /migration/status ",
			[]string{"migration verified", "MONTH   ROWS  TOPICS  DONE", "202601  1000  3       1000  1000    0        0       ok", "1000 rows in 3 topic-months"}},
		{"status watch of a stopped job", []string{"migrate", "status", "--watch"}, "GET /migration/status ", []string{"migration verified"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newAdminFake(t, answers)
			out, _, err := cli{env: map[string]string{"IMCTL_HTTP": f.srv.URL, "IMCTL_TENANT": "acme"}}.run(tt.args...)
			if err != nil {
				t.Fatal(err)
			}
			if got := f.method + " " + strings.TrimPrefix(f.uri, tenantPath) + " " + f.body; got != tt.wantReq {
				t.Errorf("request %q, want %q", got, tt.wantReq)
			}
			for _, w := range tt.wantOut {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

func TestMigrateWatchOfAFailedJobExitsNonZero(t *testing.T) {
	f := newAdminFake(t, map[string]string{"GET " + tenantPath + "/migration/status": migrationFailed})
	out, _, err := cli{env: map[string]string{"IMCTL_HTTP": f.srv.URL, "IMCTL_TENANT": "acme"}}.run("migrate", "status", "--watch")
	if !errors.Is(err, errMigrationFailed) {
		t.Fatalf("err = %v", err)
	}
	for _, w := range []string{"grp_1  202601  differs  4-4", "error: 1 mismatching ranges"} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
}

func TestMigrateGenNeedsADSN(t *testing.T) {
	_, _, err := cli{}.run("migrate", "gen")
	if err == nil || !strings.Contains(err.Error(), "--dsn is required") {
		t.Fatalf("err = %v", err)
	}
}

// TestMigrateWatchRidesOutRestartsAndPauses: a watch keeps going through an imd that does not
// answer or answers 503 (a restart) and through a pause, says which, names the index build,
// and ends with the status table once the job is verified.
func TestMigrateWatchRidesOutRestartsAndPauses(t *testing.T) {
	const months = `"months":[{"month":"202601","rows":600,"done":600,"copied":600},{"month":"202602","rows":400,"done":%d,"verified":"%s"}]`
	answers := []string{
		adminapitest.Unavailable,
		`{"job":{"phase":"copying","prepared":false,"rows":1000,"remaining":1000},` + fmt.Sprintf(months, 0, "") + `}`,
		`{"job":{"phase":"copying","prepared":true,"rows":1000,"remaining":400},` + fmt.Sprintf(months, 0, "") + `}`,
		adminapitest.Hangup,
		`{"job":{"phase":"paused","prepared":true,"rows":1000,"remaining":400},` + fmt.Sprintf(months, 0, "") + `}`,
		`{"job":{"phase":"verifying","prepared":true,"rows":1000,"remaining":0},` + fmt.Sprintf(months, 400, "ok") + `}`,
		migrationStatus,
	}
	srv := adminapitest.Sequence(t, answers...)
	out, errOut, err := cli{env: map[string]string{"IMCTL_HTTP": srv.URL, "IMCTL_TENANT": "acme"}}.run("migrate", "status", "--watch", "--interval", "1ms")
	if err != nil {
		t.Fatalf("watch ended with %v\n%s", err, errOut)
	}
	for _, w := range []string{
		"imd does not answer", "preparing: adding the index (created_at, message_id)", "copying: 600 of 1,000 rows (60%), measuring speed",
		"month 202601 copied: 600 rows", "paused at 600 of 1,000 rows: waiting for resume", "verifying: 400 of 1,000 rows (40%)", "1 of 2 months",
	} {
		if !strings.Contains(errOut, w) {
			t.Errorf("progress lacks %q:\n%s", w, errOut)
		}
	}
	if !strings.Contains(out, "migration verified") {
		t.Errorf("no status table at the end:\n%s", out)
	}
}

// TestMigrateVerifyLineCountsRows: verification progress moves row by row within a month
// while the node that verifies answers, with its rate over the window and an ETA.
func TestMigrateVerifyLineCountsRows(t *testing.T) {
	status := func(verifying string, ok string) adminapi.MigrationStatus {
		var st adminapi.MigrationStatus
		raw := `{"job":{"phase":"verifying","prepared":true,"rows":1000000,"remaining":0},"months":[` +
			`{"month":"202601","rows":400000,"done":400000,"verified":"` + ok + `"},{"month":"202602","rows":600000,"done":600000,"verified":""}]` +
			verifying + `}`
		if err := json.Unmarshal([]byte(raw), &st); err != nil {
			t.Fatal(err)
		}
		return st
	}
	m := progress.New(progress.DefaultWindow)
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	migrationLine(m, t0, status(`,"verifying":{"month":"202601","rows":100000}`, ""))
	migrationLine(m, t0.Add(5*time.Second), status(`,"verifying":{"month":"202601","rows":350000}`, ""))
	got := migrationLine(m, t0.Add(10*time.Second), status(`,"verifying":{"month":"202602","rows":200000}`, "ok"))
	if want := "verifying: 600,000 of 1,000,000 rows (60%), 50,000 rows/s, ETA 8s, 1 of 2 months, comparing 202602"; got != want {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
	if got := migrationLine(m, t0.Add(11*time.Second), status("", "ok")); !strings.Contains(got, "another node verifies") {
		t.Fatalf("answered by a node that does not verify: %q", got)
	}
}

// TestMigrateWatchStopsOnARefusal: a bad admin key is no restart: the watch ends.
func TestMigrateWatchStopsOnARefusal(t *testing.T) {
	f := newAdminFake(t, nil)
	_, _, err := cli{env: map[string]string{"IMCTL_HTTP": f.srv.URL, "IMCTL_TENANT": "acme"}}.run("migrate", "status", "--watch", "--interval", "1ms")
	if err == nil || !strings.Contains(err.Error(), "40401") {
		t.Fatalf("err = %v", err)
	}
}
