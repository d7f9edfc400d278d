package e2e

// Issue 19: Redis is a cache, not the truth. Each test loses the tenant's Redis state (all
// of it, as FLUSHALL does, or the last writes, as a failover to a lagging replica does) at the
// moment that used to hurt, and checks what a client meets afterwards.

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/imdhq/imd/adapters/redis"
	"github.com/imdhq/imd/clients/go/client"
	"github.com/imdhq/imd/clients/go/wire"
)

// sendUntilAcked retries one send the way a client does after 50301, until it is ACKed or
// limit passes; it returns the ACK and how many answers were 50301.
func sendUntilAcked(t *testing.T, ctx context.Context, c *client.Conn, req wire.SendMessageRequest, limit time.Duration) (wire.SendAck, int) {
	t.Helper()
	deadline := time.Now().Add(limit)
	busy := 0
	for {
		ack, err := c.Send(ctx, req)
		if err == nil {
			return ack, busy
		}
		if !isCode(err, wire.CodeBusy) || time.Now().After(deadline) {
			t.Fatalf("send %s after %d busy answers: %v", req.ClientMsgID, busy, err)
		}
		busy++
		time.Sleep(200 * time.Millisecond)
	}
}

func TestRedisLossAfterAnEarlyMonthSwitchKeepsTheActiveMonth(t *testing.T) {
	for _, loss := range []string{"flushall", "stale replica"} {
		t.Run(loss, func(t *testing.T) {
			srv := Start(t, Options{})
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			c := newChat(t, srv, ctx, 19, 2, 1)
			sendN(t, ctx, c.conns[0], c.topic, "before", 2)
			if got := srv.Advance(Month(1)); got != Month(1) {
				t.Fatalf("active month %s after advance", got)
			}
			sendN(t, ctx, c.conns[0], c.topic, "after", 2)

			rc := srv.Redis()
			switch loss {
			case "flushall":
				srv.dropTenantKeys(rc)
			case "stale replica":
				// The replica missed the switch: every slot group still has the month before.
				k, _ := redis.KeysOf(srv.Tenant)
				for g := range redis.SlotGroups {
					if err := rc.Do(ctx, rc.B().Set().Key(k.Group(g).ActiveMonth()).Value(Month(0)).Build()).Error(); err != nil {
						t.Fatal(err)
					}
				}
			}
			ack, busy := sendUntilAcked(t, ctx, c.conns[0], textMessage(c.topic, "lost-1", "lost 1"), 20*time.Second)
			// A lost counter is re-seeded from MySQL (seq 5); a stale one may burn the seq its
			// colliding attempt took.
			if ack.Seq < 5 || (loss == "flushall" && ack.Seq != 5) {
				t.Fatalf("first send after the loss got seq %d (after %d busy answers)", ack.Seq, busy)
			}
			// Once repaired, sends flow at once: no further 50301.
			next := sendN(t, ctx, c.conns[0], c.topic, "healed", 3)
			if next[2].Seq != ack.Seq+3 {
				t.Fatalf("seqs after repair end at %d, want %d", next[2].Seq, ack.Seq+3)
			}
			if got := srv.ActiveMonth(rc); got != Month(1) {
				t.Fatalf("active month in Redis %s, want %s (never backward)", got, Month(1))
			}
			db := srv.TenantDB()
			want := append([]int64{3, 4}, seqRange(ack.Seq, ack.Seq+3)...)
			if got := srv.SeqsInTable(db, Month(1), c.topic); !slices.Equal(got, want) {
				t.Fatalf("next month holds %v, want %v", got, want)
			}
			if got := srv.SeqsInTable(db, Month(0), c.topic); !slices.Equal(got, []int64{1, 2}) {
				t.Fatalf("the month before holds %v, want 1, 2", got)
			}
			// And a restarted node keeps the month too.
			tok := srv.token(190_001)
			srv.Kill()
			srv.dropTenantKeys(rc)
			again := Start(t, Options{Tenant: srv.Tenant})
			c2 := again.Connect(ctx, tok, 2)
			after, busy2 := sendUntilAcked(t, ctx, c2, textMessage(c.topic, "restarted", "restarted"), 20*time.Second)
			if after.Seq != ack.Seq+4 {
				t.Fatalf("send after a restart got seq %d (after %d busy answers), want %d", after.Seq, busy2, ack.Seq+4)
			}
			if got := srv.ActiveMonth(rc); got != Month(1) {
				t.Fatalf("active month in Redis after a restart %s, want %s", got, Month(1))
			}
			t.Logf("%s: %d answers of 50301 before the first ACK", loss, busy)
		})
	}
}

// token issues a token for an existing user.
func (s *Server) token(user int64) string {
	s.t.Helper()
	var tok struct {
		Token string `json:"token"`
	}
	s.MustAdmin("POST", "/tokens", map[string]any{"user_id": user}, &tok)
	return tok.Token
}

// TestRevokedTokenStaysRevokedAfterRedisLoss: revocations live in MySQL and nothing of them
// in Redis (issue 18), so losing Redis revives no token, on the frame listener or the client
// API.
func TestRevokedTokenStaysRevokedAfterRedisLoss(t *testing.T) {
	srv := Start(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	one := srv.User(191)
	all := srv.token(191)
	kept := srv.User(192)
	// Checked once before the revocation, so the node remembers a "not revoked" answer.
	for _, tok := range []string{one, all, kept} {
		mustCall(t, srv, tok, "GET", "/api/v1/me", nil, nil)
	}
	srv.MustAdmin("POST", "/tokens/revoke", map[string]string{"token": one}, nil)
	time.Sleep(1100 * time.Millisecond) // token times have second precision
	srv.MustAdmin("POST", "/tokens/revoke", map[string]int64{"user_id": 191}, nil)

	rc := srv.Redis()
	for _, step := range []string{"revoked", "after FLUSHALL", "after FLUSHALL and a restart"} {
		switch step {
		case "after FLUSHALL":
			srv.dropTenantKeys(rc)
		case "after FLUSHALL and a restart":
			srv.Kill()
			srv.dropTenantKeys(rc)
			srv = Start(t, Options{Tenant: srv.Tenant})
		}
		for _, tok := range []string{one, all} {
			refused(t, srv, tok, "GET", "/api/v1/me", nil, 40101)
			c := srv.Dial(ctx)
			if _, err := c.Auth(ctx, tok, 1); !isCode(err, wire.CodeUnauthenticated) {
				t.Fatalf("%s: AUTH with a revoked token: %v, want 40101", step, err)
			}
		}
		mustCall(t, srv, kept, "GET", "/api/v1/me", nil, nil)
		srv.Connect(ctx, kept, 1)
	}
}

// dropKeys deletes the tenant's Redis keys that match pattern (after the tenant prefix).
func (s *Server) dropKeys(rc rueidis.Client, pattern string) int {
	s.t.Helper()
	ctx := context.Background()
	keys, err := rc.Do(ctx, rc.B().Keys().Pattern(s.keyPattern(pattern)).Build()).AsStrSlice()
	if err != nil {
		s.t.Fatal(err)
	}
	s.delKeys(rc, keys)
	return len(keys)
}

// pushesUntil counts MESSAGE pushes by seq until the push of seq last arrived. A topic's jobs
// are delivered in queue order, so a second job of an earlier message would have come first.
func pushesUntil(t *testing.T, c *client.Conn, last int64, limit time.Duration) map[int64]int {
	t.Helper()
	got := make(map[int64]int)
	deadline := time.After(limit)
	for got[last] == 0 {
		select {
		case p := <-c.Pushes():
			if p.Command == wire.CmdMessage && p.Message != nil {
				got[p.Message.Seq]++
			}
		case <-deadline:
			t.Fatalf("no push of seq %d within %v; got %v", last, limit, got)
		}
	}
	return got
}

// TestLateResendIsNotDeliveredAgain: a resend of a message already ACKed and delivered, after
// the deliver worker's done marker expired (and after Redis lost the idempotency record too),
// answers the first seq and msg_id and pushes nothing: deliver-once rests on MySQL.
func TestLateResendIsNotDeliveredAgain(t *testing.T) {
	srv := Start(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := newChat(t, srv, ctx, 193, 2, 2)
	sender, recipient := c.conns[0], c.conns[1]
	rc := srv.Redis()

	first := sendN(t, ctx, sender, c.topic, "late", 1)[0]
	if got := pushesUntil(t, recipient, first.Seq, 15*time.Second); got[first.Seq] != 1 {
		t.Fatalf("pushes of the first send: %v", got)
	}
	eventually(t, 10*time.Second, "unread 1", func() bool { return unreadOf(srv, rc, 1930002, c.topic) == 1 })

	for i, lose := range []string{"deliver:done:*", "groupmsg:idem:*"} {
		// The done marker expires (deliver.done_ttl); then Redis loses the idempotency record.
		if n := srv.dropKeys(rc, lose); n == 0 && lose == "deliver:done:*" {
			t.Fatal("no done marker to expire")
		}
		again, err := sender.Send(ctx, textMessage(c.topic, "late-0", "late 0"))
		if err != nil || again.Seq != first.Seq || again.MsgID != first.MsgID {
			t.Fatalf("late resend after losing %s: %+v, %v; want seq %d msg_id %d", lose, again, err, first.Seq, first.MsgID)
		}
		next := sendN(t, ctx, sender, c.topic, fmt.Sprint("barrier-", i), 1)[0]
		got := pushesUntil(t, recipient, next.Seq, 15*time.Second)
		if got[first.Seq] != 0 {
			t.Fatalf("after losing %s the resend was pushed again: %v", lose, got)
		}
		want := int64(2 + i)
		eventually(t, 10*time.Second, "unread count", func() bool { return unreadOf(srv, rc, 1930002, c.topic) >= want })
		if u := unreadOf(srv, rc, 1930002, c.topic); u != want {
			t.Fatalf("unread %d after losing %s, want %d (one per message)", u, lose, want)
		}
	}
}
