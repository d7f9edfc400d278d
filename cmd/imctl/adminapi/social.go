package adminapi

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Tenant is a tenant the server serves.
type Tenant struct {
	Tenant    string `json:"tenant"`
	Database  string `json:"database"`
	Source    string `json:"source"` // config | provisioned
	CreatedAt int64  `json:"created_at,omitempty"`
}

// server returns a client of the same server whose paths start at /admin/v1 rather than at
// the tenant, for the tenant registry routes.
func (c *Client) server() *Client {
	s := *c
	s.base = strings.TrimSuffix(c.base, "/tenants/"+url.PathEscape(c.tenant))
	return &s
}

// Tenants lists the served tenants, configured and provisioned.
func (c *Client) Tenants(ctx context.Context) ([]Tenant, error) {
	var out struct {
		Tenants []Tenant `json:"tenants"`
	}
	err := c.server().do(ctx, http.MethodGet, "/tenants", nil, &out)
	return out.Tenants, err
}

// ProvisionTenant creates a tenant (database "" = imd_<name>) and returns it; provisioning it
// again with the same database is harmless.
func (c *Client) ProvisionTenant(ctx context.Context, name, database string) (Tenant, error) {
	body := struct {
		Tenant   string `json:"tenant"`
		Database string `json:"database,omitempty"`
	}{name, database}
	var t Tenant
	err := c.server().do(ctx, http.MethodPost, "/tenants", body, &t)
	return t, err
}

// Block makes user block blocked: no P2P messages between them either way.
func (c *Client) Block(ctx context.Context, user, blocked int64) error {
	body := struct {
		UserID        int64 `json:"user_id"`
		BlockedUserID int64 `json:"blocked_user_id"`
	}{user, blocked}
	return c.do(ctx, http.MethodPost, "/blocks", body, nil)
}

// Unblock lifts user's block of blocked.
func (c *Client) Unblock(ctx context.Context, user, blocked int64) error {
	return c.do(ctx, http.MethodDelete, "/blocks/"+id(user)+"/"+id(blocked), nil, nil)
}

// Blocks lists whom user blocked.
func (c *Client) Blocks(ctx context.Context, user int64) ([]int64, error) {
	var out struct {
		UserIDs []int64 `json:"user_ids"`
	}
	err := c.do(ctx, http.MethodGet, "/users/"+id(user)+"/blocks", nil, &out)
	return out.UserIDs, err
}

// MuteAll mutes (on) or unmutes everyone in a group but its owner and admins.
func (c *Client) MuteAll(ctx context.Context, group int64, on bool) error {
	body := struct {
		MuteAll bool `json:"mute_all"`
	}{on}
	return c.do(ctx, http.MethodPut, "/groups/"+id(group)+"/mute_all", body, nil)
}

// MuteMember mutes a member for d; 0 unmutes.
func (c *Client) MuteMember(ctx context.Context, group, user int64, d time.Duration) error {
	body := struct {
		DurationSeconds int64 `json:"duration_seconds"`
	}{int64(d / time.Second)}
	return c.do(ctx, http.MethodPut, "/groups/"+id(group)+"/members/"+id(user)+"/mute", body, nil)
}

// RevokeToken revokes one token of the tenant.
func (c *Client) RevokeToken(ctx context.Context, token string) error {
	body := struct {
		Token string `json:"token"`
	}{token}
	return c.do(ctx, http.MethodPost, "/tokens/revoke", body, nil)
}

// RevokeUser revokes every token of a user issued so far and returns the cut-off (Unix ms).
func (c *Client) RevokeUser(ctx context.Context, user int64) (int64, error) {
	body := struct {
		UserID int64 `json:"user_id"`
	}{user}
	var out struct {
		IssuedBefore int64 `json:"issued_before"`
	}
	err := c.do(ctx, http.MethodPost, "/tokens/revoke", body, &out)
	return out.IssuedBefore, err
}

func id(v int64) string { return strconv.FormatInt(v, 10) }
