package typing_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/memory"
	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/delivery"
	"github.com/imdhq/imd/core/domain/social"
	"github.com/imdhq/imd/core/store/membership"
	"github.com/imdhq/imd/core/usecase/conversation"
	"github.com/imdhq/imd/core/usecase/typing"
)

const tenant = "acme"

type world struct {
	svc     *typing.Service
	pusher  *memory.Pushes
	clock   *memory.Clock
	metrics *memory.Metrics
}

// newWorld: 1 and 2 are friends; group 10 is 1, 2, 3; group 11 is 1 and 4..7, above the
// limit of 4.
func newWorld(t *testing.T) *world {
	t.Helper()
	ctx := t.Context()
	clock := memory.NewClock(time.UnixMilli(1_796_169_600_000))
	dir := memory.NewDirectory()
	for u := int64(1); u <= 8; u++ {
		if err := dir.CreateUser(ctx, tenant, social.User{ID: u}); err != nil {
			t.Fatal(err)
		}
	}
	if err := dir.AddFriendship(ctx, tenant, 1, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := dir.CreateGroup(ctx, tenant, social.Group{ID: 10, Owner: 1}, 100, []int64{1, 2, 3}, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := dir.CreateGroup(ctx, tenant, social.Group{ID: 11, Owner: 1}, 101, []int64{1, 4, 5, 6, 7}, 0); err != nil {
		t.Fatal(err)
	}
	// 3 is muted in group 10; 8 blocked its friend 1.
	if err := dir.MuteMember(ctx, tenant, 10, 3, clock.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := dir.AddFriendship(ctx, tenant, 1, 8); err != nil {
		t.Fatal(err)
	}
	if err := dir.Block(ctx, tenant, 8, 1); err != nil {
		t.Fatal(err)
	}
	members := membership.New(dir, clock, time.Minute)
	w := &world{pusher: &memory.Pushes{}, clock: clock, metrics: memory.NewMetrics()}
	w.svc = typing.New(typing.Config{GroupLimit: 4, Expires: 5 * time.Second, PerDevice: 3, Window: 10 * time.Second}, typing.Deps{
		Resolver: conversation.NewResolver(dir, memory.NewIDs(clock), members, conversation.WithClock(clock)),
		Members:  members, Pusher: w.pusher, Clock: clock, Metrics: w.metrics, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	return w
}

func TestTypingGoesToTheOtherMembers(t *testing.T) {
	tests := []struct {
		name   string
		user   int64
		addr   conversation.Address
		typing bool
		to     []int64
		notice typing.Notice
		code   apperr.Code
	}{
		{name: "a pair, by to_user", user: 1, addr: conversation.Address{ToUser: 2}, typing: true, to: []int64{2},
			notice: typing.Notice{Topic: "p2p_1_2", UserID: 1, Typing: true, ExpiresIn: 5000}},
		{name: "a small group, stop", user: 2, addr: conversation.Address{Topic: "grp_10"}, to: []int64{1, 3},
			notice: typing.Notice{Topic: "grp_10", ConversationID: 100, UserID: 2}},
		{name: "a group above the limit", user: 1, addr: conversation.Address{Topic: "grp_11"}, typing: true, code: apperr.Forbidden},
		{name: "not a member", user: 4, addr: conversation.Address{Topic: "grp_10"}, typing: true, code: apperr.Forbidden},
		{name: "a pair one is not in", user: 3, addr: conversation.Address{Topic: "p2p_1_2"}, typing: true, code: apperr.Forbidden},
		{name: "a muted member", user: 3, addr: conversation.Address{Topic: "grp_10"}, typing: true, code: apperr.Forbidden},
		{name: "a blocked peer", user: 1, addr: conversation.Address{ToUser: 8}, typing: true, code: apperr.Forbidden},
		{name: "a bad topic", user: 1, addr: conversation.Address{Topic: "grp_x"}, typing: true, code: apperr.InvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t)
			_, err := w.svc.Typing(t.Context(), typing.Request{Tenant: tenant, User: tt.user, Device: 1, Address: tt.addr, Typing: tt.typing})
			if apperr.CodeOf(err) != tt.code {
				t.Fatalf("code %v (%v); want %v", apperr.CodeOf(err), err, tt.code)
			}
			got := w.pusher.Take()
			if tt.code != apperr.OK {
				if len(got) != 0 {
					t.Fatalf("a refused notice was pushed: %+v", got)
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("%d pushes; want 1", len(got))
			}
			a := got[0]
			var n typing.Notice
			if err := json.Unmarshal(a.Push.Data, &n); err != nil {
				t.Fatal(err)
			}
			if a.Push.Kind != delivery.KindTyping || !slices.Equal(a.Target.Recipients, tt.to) || n != tt.notice {
				t.Fatalf("pushed %s %+v to %v; want %+v to %v", a.Push.Kind, n, a.Target.Recipients, tt.notice, tt.to)
			}
			if !a.Target.NotMailbox || !a.Target.NotPush {
				t.Fatalf("a typing notice must be live only: %+v", a.Target)
			}
		})
	}
}

func TestTypingIsLimitedPerDevice(t *testing.T) {
	w := newWorld(t)
	ctx := t.Context()
	send := func(device uint64) apperr.Code {
		_, err := w.svc.Typing(ctx, typing.Request{Tenant: tenant, User: 1, Device: device, Address: conversation.Address{ToUser: 2}, Typing: true})
		return apperr.CodeOf(err)
	}
	for i := range 3 {
		if c := send(1); c != apperr.OK {
			t.Fatalf("request %d: %v", i+1, c)
		}
	}
	if c := send(1); c != apperr.RateLimited {
		t.Fatalf("the 4th request in the window: %v; want 42901", c)
	}
	if c := send(2); c != apperr.OK {
		t.Fatalf("another device has its own budget: %v", c)
	}
	w.clock.Advance(10 * time.Second)
	if c := send(1); c != apperr.OK {
		t.Fatalf("after the window: %v", c)
	}
	if n := len(w.pusher.Take()); n != 5 || w.metrics.Count("typing_total", "limited") != 1 || w.metrics.Count("typing_pushes_total") != 5 {
		t.Fatalf("pushes %d, limited %v, fan-out %v", n, w.metrics.Count("typing_total", "limited"), w.metrics.Count("typing_pushes_total"))
	}
}
