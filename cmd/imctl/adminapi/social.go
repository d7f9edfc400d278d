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
	Tenant   string `json:"tenant"`
	Database string `json:"database"`
	// DSN is the MySQL server of a tenant placed on another than the default, password masked.
	DSN       string `json:"dsn,omitempty"`
	Source    string `json:"source"` // config | provisioned
	CreatedAt int64  `json:"created_at,omitempty"`
}

type tenantsAnswer struct {
	Tenants []Tenant `json:"tenants"`
}

type provisionRequest struct {
	Tenant   string `json:"tenant"`
	Database string `json:"database,omitempty"`
	DSN      string `json:"dsn,omitempty"`
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
	var out tenantsAnswer
	err := c.server().do(ctx, http.MethodGet, "/tenants", nil, &out)
	return out.Tenants, err
}

// ProvisionTenant creates a tenant (database "" = imd_<name>) on the MySQL server dsn names
// ("" = the server's default) and returns it; provisioning it again with the same database
// and server is harmless.
func (c *Client) ProvisionTenant(ctx context.Context, name, database, dsn string) (Tenant, error) {
	var t Tenant
	err := c.server().do(ctx, http.MethodPost, "/tenants", provisionRequest{name, database, dsn}, &t)
	return t, err
}

type blockRequest struct {
	UserID        int64 `json:"user_id"`
	BlockedUserID int64 `json:"blocked_user_id"`
}

// Block makes user block blocked: no P2P messages between them either way.
func (c *Client) Block(ctx context.Context, user, blocked int64) error {
	return c.do(ctx, http.MethodPost, "/blocks", blockRequest{user, blocked}, nil)
}

// Unblock lifts user's block of blocked.
func (c *Client) Unblock(ctx context.Context, user, blocked int64) error {
	return c.do(ctx, http.MethodDelete, "/blocks/"+id(user)+"/"+id(blocked), nil, nil)
}

// Blocks lists whom user blocked.
func (c *Client) Blocks(ctx context.Context, user int64) ([]int64, error) {
	var out userIDs
	err := c.do(ctx, http.MethodGet, "/users/"+id(user)+"/blocks", nil, &out)
	return out.UserIDs, err
}

type muteAllRequest struct {
	MuteAll bool `json:"mute_all"`
}

// MuteAll mutes (on) or unmutes everyone in a group but its owner and admins.
func (c *Client) MuteAll(ctx context.Context, group int64, on bool) error {
	return c.do(ctx, http.MethodPut, "/groups/"+id(group)+"/mute_all", muteAllRequest{on}, nil)
}

type muteRequest struct {
	DurationSeconds int64 `json:"duration_seconds"`
}

// MuteMember mutes a member for d; 0 unmutes.
func (c *Client) MuteMember(ctx context.Context, group, user int64, d time.Duration) error {
	return c.do(ctx, http.MethodPut, "/groups/"+id(group)+"/members/"+id(user)+"/mute", muteRequest{int64(d / time.Second)}, nil)
}

// revokeRequest names one token or one user.
type revokeRequest struct {
	Token  string `json:"token,omitempty"`
	UserID int64  `json:"user_id,omitempty"`
}

// revokeAnswer says what was revoked: a token, or a user's tokens issued before a time.
type revokeAnswer struct {
	Revoked      string `json:"revoked"`
	UserID       int64  `json:"user_id,omitempty"`
	IssuedBefore int64  `json:"issued_before,omitempty"`
}

// RevokeToken revokes one token of the tenant.
func (c *Client) RevokeToken(ctx context.Context, token string) error {
	return c.do(ctx, http.MethodPost, "/tokens/revoke", revokeRequest{Token: token}, nil)
}

// RevokeUser revokes every token of a user issued so far and returns the cut-off (Unix ms).
func (c *Client) RevokeUser(ctx context.Context, user int64) (int64, error) {
	var out revokeAnswer
	err := c.do(ctx, http.MethodPost, "/tokens/revoke", revokeRequest{UserID: user}, &out)
	return out.IssuedBefore, err
}

func id(v int64) string { return strconv.FormatInt(v, 10) }

type userStatusRequest struct {
	Status string `json:"status"`
}

// UserStatus is a user's status: active, disabled or deleted.
type UserStatus struct {
	UserID int64  `json:"user_id"`
	Status string `json:"status"`
}

// UserStatus reads a user's status.
func (c *Client) UserStatus(ctx context.Context, user int64) (UserStatus, error) {
	var out UserStatus
	err := c.do(ctx, http.MethodGet, "/users/"+id(user)+"/status", nil, &out)
	return out, err
}

// SetUserStatus disables ("disabled") or enables ("active") a user.
func (c *Client) SetUserStatus(ctx context.Context, user int64, status string) (UserStatus, error) {
	var out UserStatus
	err := c.do(ctx, http.MethodPut, "/users/"+id(user)+"/status", userStatusRequest{status}, &out)
	return out, err
}

// DeleteUser deletes a user for good.
func (c *Client) DeleteUser(ctx context.Context, user int64) (UserStatus, error) {
	var out UserStatus
	err := c.do(ctx, http.MethodDelete, "/users/"+id(user), nil, &out)
	return out, err
}
