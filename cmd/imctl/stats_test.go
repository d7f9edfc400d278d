package main

import (
	"strings"
	"testing"
)

func TestStatsAndTransferCommands(t *testing.T) {
	answers := map[string]string{
		"GET " + tenantPath + "/stats": `{"users":3,"groups":1,` +
			`"months":[{"month":"203003","table_name":"im_group_messages_203003","status":"writable","messages":12,"topics":2,"group_topics":1,"p2p_topics":1}],` +
			`"days":[{"day":"2030-03-02","messages":12,"group_messages":9,"p2p_messages":3}]}`,
		"PUT " + tenantPath + "/groups/5/owner": `{"group_id":5,"owner":8}`,
	}
	tests := []struct {
		name    string
		args    []string
		wantReq string // method, URI and body
		wantOut []string
	}{
		{"stats", []string{"stats"}, `GET ` + tenantPath + `/stats `, []string{
			"users 3, groups 1", "203003  writable  12", "2030-03-02  12        9      3",
		}},
		{"stats of days", []string{"stats", "--from", "2030-03-01", "--to", "203003"}, `GET ` + tenantPath + `/stats?from=2030-03-01&to=203003 `, nil},
		{"stats as JSON", []string{"stats", "--json"}, `GET ` + tenantPath + `/stats `, []string{`"group_messages": 9`}},
		{"group transfer", []string{"group", "transfer", "5", "8"}, `PUT ` + tenantPath + `/groups/5/owner {"user_id":8}`, []string{"group 5 is owned by 8\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newAdminFake(t, answers)
			c := cli{env: map[string]string{"IMCTL_HTTP": f.srv.URL, "IMCTL_TENANT": "acme"}}
			out, _, err := c.run(tt.args...)
			if err != nil {
				t.Fatal(err)
			}
			if got := f.method + " " + f.uri + " " + f.body; got != tt.wantReq {
				t.Errorf("request %q, want %q", got, tt.wantReq)
			}
			for _, want := range tt.wantOut {
				if !strings.Contains(out, want) {
					t.Errorf("output %q lacks %q", out, want)
				}
			}
		})
	}
	f := newAdminFake(t, nil)
	c := cli{env: map[string]string{"IMCTL_HTTP": f.srv.URL, "IMCTL_TENANT": "acme"}}
	for _, args := range [][]string{{"group", "transfer", "5"}, {"group", "transfer", "5", "x"}, {"stats", "extra"}} {
		if _, _, err := c.run(args...); err == nil {
			t.Errorf("imctl %s succeeded", strings.Join(args, " "))
		}
	}
}
