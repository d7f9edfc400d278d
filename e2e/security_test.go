package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/jwt"
	"github.com/imdhq/imd/clients/go/client"
	"github.com/imdhq/imd/core/domain/auth"
)

// The holes a probe from outside found (issue 33 item 5), each closed and proven here.

// TestTokenOfUnknownUserIsRefused: a token signed with the deployment's own key for a user id
// the tenant does not hold is refused with 40101 at AUTH on TCP and WebSocket and by the
// client API, where it used to open a session (code 0) or pass until a lookup said 40401.
func TestTokenOfUnknownUserIsRefused(t *testing.T) {
	srv := Start(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	known := srv.User(1)
	forged, err := jwt.New([]byte(srv.env["IMD_TOKEN_SECRET"])).Issue(auth.Identity{Tenant: srv.Tenant, UserID: 404}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range []struct{ name, addr string }{
		{"tcp", srv.TCPAddr},
		{"websocket", "ws://" + srv.HTTPAddr + "/ws"},
	} {
		t.Run(tr.name, func(t *testing.T) {
			c, err := client.Dial(ctx, client.Options{Addr: tr.addr, RequestTimeout: 15 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			_, err = c.Auth(ctx, forged, 1)
			assertCode(t, err, 40101)
			if _, err := c.Auth(ctx, known, 1); err != nil {
				t.Fatalf("a token of an existing user on the same connection: %v", err)
			}
		})
	}
	refused(t, srv, forged, "GET", "/api/v1/me", nil, 40101)
	refused(t, srv, forged, "GET", "/api/v1/friends", nil, 40101)
	mustCall(t, srv, known, "GET", "/api/v1/me", nil, nil)
}
