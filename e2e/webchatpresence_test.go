package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// TestWebChatShowsUnknownPresenceUntilHealed (issue 31 parts 1 and 6, DESIGN §13 "Unknown
// until healed"): while the server's presence registry heals from a Redis loss, the web chat
// shows a peer's state as unknown — a hollow dot titled "status unknown", no "last seen" —
// and asks again (the SDK's PresenceRefresher) until the answer is known. Alice and Bob are
// no longer friends and share no group, so no PRESENCE push comes after the heal: only the
// re-query turns the dot back to online.
func TestWebChatShowsUnknownPresenceUntilHealed(t *testing.T) {
	srv := Start(t, Options{Env: map[string]string{"IMD_HTTP_DEV_SIGNIN": "true", "IMD_CLUSTER_LEASE_TTL": "5s"}})
	const alice, bob = 3101, 3102
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	devSignIn(t, srv, alice, "Alice Unknown")
	bobToken := devSignIn(t, srv, bob, "Bob Unknown")
	srv.MustAdmin("POST", "/friendships", map[string]any{"user_a": alice, "user_b": bob}, nil)
	phone := srv.Connect(ctx, bobToken, 1)
	if _, err := sendTo(ctx, phone, alice, "unknown-1", "am I online?"); err != nil {
		t.Fatal(err)
	}
	srv.MustAdmin("DELETE", fmt.Sprintf("/friendships/%d/%d", alice, bob), nil, nil)
	p2p := fmt.Sprintf("p2p_%d_%d", alice, bob)

	a := openChat(t, srv, "alice-unknown", alice, "", 21)
	a.waitFor("bob's dot online", dot(dialog(p2p, ""), bob)+" === 'online'", 30*time.Second)

	srv.dropTenantKeys(srv.Redis())
	// Opening the conversation asks after Bob while the registry heals.
	a.conversation(p2p, "Bob Unknown")
	hollow := dot("#conversation-header", bob) + " === 'unknown' && document.querySelector('#conversation-header .dot').title === 'status unknown'"
	a.waitFor("bob's dot unknown", hollow, 10*time.Second)
	a.waitText("#presence", "status unknown", 5*time.Second)
	a.shot("alice-sees-bob-unknown")

	a.waitFor("bob's dot online again", dot("#conversation-header", bob)+" === 'online' && "+dot(dialog(p2p, ""), bob)+" === 'online'", 45*time.Second)
	a.waitText("#presence", "online", 5*time.Second)
}
