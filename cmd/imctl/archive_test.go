package main

import (
	"fmt"
	"strings"
	"testing"
)

// manifestWith is a manifest of n topics, topic i holding i rows.
func manifestWith(n int) string {
	var topics []string
	for i := 1; i <= n; i++ {
		topics = append(topics, fmt.Sprintf(`{"topic":"grp_%d","min_seq":1,"max_seq":%d,"count":%d,"chunks":1}`, i, i, i))
	}
	return `{"month":"202601","created_at":1790000000000,"rows":1275,"chunks":50,"bytes":123456,"topics":[` + strings.Join(topics, ",") + `]}`
}

func TestArchiveOutput(t *testing.T) {
	const job = `{"job_id":"j1","op":"%s","target":"202601","state":"done","progress":{"phase":"done","topics_done":50,"topics_total":50,"rows":1275},"started_at":1000,"finished_at":3000%s}`
	answers := map[string]string{
		"POST " + tenantPath + "/shards/202601/archive":       `{"job_id":"j1"}`,
		"GET " + tenantPath + "/jobs/j1":                      fmt.Sprintf(job, "archive", ""),
		"GET " + tenantPath + "/shards/202601/archive":        manifestWith(50),
		"POST " + tenantPath + "/shards/202601/archive/check": fmt.Sprintf(job, "archive/check", `,"result":{"month":"202601","state":"sealed","topics":50,"rows":1275,"problems":["grp_3: seq 2 missing"]}`),
	}
	tests := []struct {
		name    string
		args    []string
		want    []string
		notWant []string
	}{
		{"archive summarizes", []string{"archive", "202601"},
			[]string{"month 202601 archived", "1,275 rows, 50 topics, 50 chunks, 123,456 bytes", "largest 10 topics (--full lists all 50)", "grp_50", "grp_41"},
			[]string{"grp_40 ", "grp_1 "}},
		{"archive --full lists every topic", []string{"archive", "202601", "--full"}, []string{"grp_1 ", "grp_50"}, []string{"largest"}},
		{"show summarizes too", []string{"archive", "show", "202601"}, []string{"largest 10 topics"}, []string{"grp_1 "}},
		{"check reads its report", []string{"archive", "check", "202601"},
			[]string{"archive/check 202601: done in 2s (1,275 rows)", "month 202601 (sealed): 50 topics, 1,275 rows: 1 problems", "  - grp_3: seq 2 missing"},
			[]string{`{"month"`, `"problems"`}},
		{"check --json is JSON", []string{"archive", "check", "202601", "--json"}, []string{`"problems": [`}, []string{"not archivable"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newAdminFake(t, answers)
			out, _, err := cli{env: map[string]string{"IMCTL_HTTP": f.srv.URL, "IMCTL_TENANT": "acme"}}.run(tt.args...)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(out, w) {
					t.Errorf("output has %q:\n%s", w, out)
				}
			}
		})
	}
}

func TestShardsShowDroppedTables(t *testing.T) {
	f := newAdminFake(t, map[string]string{"GET " + tenantPath + "/shards": `{"shards":[` +
		`{"shard_month":"202601","table_name":"im_group_messages_202601","status":"archived","table_dropped":true},` +
		`{"shard_month":"202602","table_name":"im_group_messages_202602","status":"archived","table_dropped":false}]}`})
	out, _, err := cli{env: map[string]string{"IMCTL_HTTP": f.srv.URL, "IMCTL_TENANT": "acme"}}.run("shards")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "im_group_messages_202601") || !strings.Contains(out, "202601  (dropped: in the archive)") ||
		!strings.Contains(out, "im_group_messages_202602") {
		t.Fatalf("shards:\n%s", out)
	}
}
