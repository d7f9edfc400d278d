package main

import (
	"strings"
	"testing"
)

func TestSocialCommands(t *testing.T) {
	answers := map[string]string{
		"GET /admin/v1/tenants":                          `{"tenants":[{"tenant":"acme","database":"imd_acme","source":"config"},{"tenant":"beta","database":"db_beta","source":"provisioned","created_at":1893456000000}]}`,
		"POST /admin/v1/tenants":                         `{"tenant":"beta","database":"db_beta","source":"provisioned","created_at":1893456000000}`,
		"GET " + tenantPath + "/users/7/blocks":          `{"user_ids":[8,9]}`,
		"POST " + tenantPath + "/blocks":                 `{}`,
		"DELETE " + tenantPath + "/blocks/7/8":           `{}`,
		"PUT " + tenantPath + "/groups/5/mute_all":       `{"mute_all":true}`,
		"PUT " + tenantPath + "/groups/5/members/8/mute": `{}`,
		"POST " + tenantPath + "/tokens/revoke":          `{"revoked":"user","user_id":7,"issued_before":1893456000000}`,
	}
	tests := []struct {
		name    string
		args    []string
		wantReq string // method, URI and body
		wantOut []string
	}{
		{"tenants", []string{"tenants"}, `GET /admin/v1/tenants `, []string{"TENANT  DATABASE  SOURCE       CREATED", "beta    db_beta   provisioned  2030-01-01T00:00:00Z"}},
		{"tenants create", []string{"tenants", "create", "beta", "--database", "db_beta"}, `POST /admin/v1/tenants {"tenant":"beta","database":"db_beta"}`, []string{"tenant beta is served, database db_beta\n"}},
		{"tenants create default database", []string{"tenants", "create", "beta"}, `POST /admin/v1/tenants {"tenant":"beta"}`, nil},
		{"blocks list", []string{"blocks", "list", "7"}, `GET ` + tenantPath + `/users/7/blocks `, []string{"8\n9\n"}},
		{"blocks add", []string{"blocks", "add", "7", "8"}, `POST ` + tenantPath + `/blocks {"user_id":7,"blocked_user_id":8}`, []string{"7 blocked 8\n"}},
		{"blocks remove", []string{"blocks", "remove", "7", "8"}, `DELETE ` + tenantPath + `/blocks/7/8 `, []string{"7 unblocked 8\n"}},
		{"mute all", []string{"mute", "all", "5"}, `PUT ` + tenantPath + `/groups/5/mute_all {"mute_all":true}`, []string{"group 5 muted"}},
		{"unmute all", []string{"mute", "all", "5", "--off"}, `PUT ` + tenantPath + `/groups/5/mute_all {"mute_all":false}`, []string{"group 5 unmuted\n"}},
		{"mute member", []string{"mute", "member", "5", "8", "--for", "10m"}, `PUT ` + tenantPath + `/groups/5/members/8/mute {"duration_seconds":600}`, []string{"8 muted in group 5 for 10m0s\n"}},
		{"unmute member", []string{"mute", "member", "5", "8", "--for", "0"}, `PUT ` + tenantPath + `/groups/5/members/8/mute {"duration_seconds":0}`, []string{"8 unmuted in group 5\n"}},
		{"revoke token", []string{"revoke", "token", "tok.en"}, `POST ` + tenantPath + `/tokens/revoke {"token":"tok.en"}`, []string{"token revoked\n"}},
		{"revoke user", []string{"revoke", "user", "7"}, `POST ` + tenantPath + `/tokens/revoke {"user_id":7}`, []string{"tokens of 7 issued before 2030-01-01T00:00:00Z revoked\n"}},
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
}

func TestSocialCommandErrors(t *testing.T) {
	f := newAdminFake(t, nil)
	c := cli{env: map[string]string{"IMCTL_HTTP": f.srv.URL, "IMCTL_TENANT": "acme"}}
	for _, args := range [][]string{
		{"blocks", "add", "7", "x"},
		{"mute", "member", "5", "8"},
		{"mute", "member", "5", "8", "--for", "-1s"},
		{"revoke", "user", "0"},
		{"tenants", "create", "beta"}, // the fake answers 404
	} {
		if _, _, err := c.run(args...); err == nil {
			t.Errorf("imctl %s succeeded", strings.Join(args, " "))
		}
	}
}
