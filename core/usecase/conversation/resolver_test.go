package conversation_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/memory"
	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/social"
	"github.com/imdhq/imd/core/domain/topic"
	"github.com/imdhq/imd/core/store/membership"
	"github.com/imdhq/imd/core/usecase/conversation"
)

const tenant = "acme"

// Users of the fixture: 1 owns group 10, 2 is its admin, 3 and 4 are members; 1–2 and 1–3
// are friends; 5 and 6 are friends but 6 blocked 5; 7 and 8 are friends but 7 blocked 8;
// 9 is a system account; 4 is muted for an hour; group 20 (owner 1, member 3) is muted.
type fixture struct {
	dir      *countingDirectory
	clock    *memory.Clock
	resolver *conversation.Resolver
}

// countingDirectory counts the rule lookups that reach storage.
type countingDirectory struct {
	*memory.Directory
	policies atomic.Int64
}

func (c *countingDirectory) GroupPolicy(ctx context.Context, tenant string, groupID int64, now time.Time) (social.GroupPolicy, error) {
	c.policies.Add(1)
	return c.Directory.GroupPolicy(ctx, tenant, groupID, now)
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	clock := memory.NewClock(time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC))
	dir := &countingDirectory{Directory: memory.NewDirectory()}
	for id := int64(1); id <= 9; id++ {
		must(t, dir.CreateUser(ctx, tenant, social.User{ID: id}))
	}
	for _, p := range [][2]int64{{1, 2}, {1, 3}, {5, 6}, {7, 8}} {
		must(t, dir.AddFriendship(ctx, tenant, p[0], p[1]))
	}
	must(t, dir.Block(ctx, tenant, 6, 5))
	must(t, dir.Block(ctx, tenant, 7, 8))
	_, err := dir.CreateGroup(ctx, tenant, social.Group{ID: 10, Owner: 1}, 1000, []int64{2, 3, 4}, 0)
	must(t, err)
	must(t, dir.SetRole(ctx, tenant, 10, 2, social.RoleAdmin))
	must(t, dir.MuteMember(ctx, tenant, 10, 4, clock.Now().Add(time.Hour)))
	_, err = dir.CreateGroup(ctx, tenant, social.Group{ID: 20, Owner: 1}, 2000, []int64{2, 3}, 0)
	must(t, err)
	must(t, dir.SetRole(ctx, tenant, 20, 2, social.RoleAdmin))
	must(t, dir.SetMuteAll(ctx, tenant, 20, true))
	ids := memory.NewIDs(clock)
	members := membership.New(dir, clock, time.Minute)
	r := conversation.NewResolver(dir, ids, members,
		conversation.WithClock(clock), conversation.WithRulesTTL(time.Minute), conversation.WithSystemAccounts([]int64{9}))
	return &fixture{dir: dir, clock: clock, resolver: r}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestForSendRules(t *testing.T) {
	tests := []struct {
		name    string
		from    int64
		addr    conversation.Address
		msgType string
		want    apperr.Code
	}{
		{"P2P friends", 1, conversation.Address{ToUser: 2}, "text", apperr.OK},
		{"P2P friends, other direction", 2, conversation.Address{ToUser: 1}, "text", apperr.OK},
		{"P2P by topic", 3, conversation.Address{Topic: topic.ForPair(1, 3)}, "text", apperr.OK},
		{"P2P not friends", 2, conversation.Address{ToUser: 3}, "text", apperr.Forbidden},
		{"P2P the recipient blocked the sender", 5, conversation.Address{ToUser: 6}, "text", apperr.Forbidden},
		{"P2P the sender blocked the recipient", 6, conversation.Address{ToUser: 5}, "text", apperr.Forbidden},
		{"P2P blocked, other pair", 8, conversation.Address{ToUser: 7}, "text", apperr.Forbidden},
		{"P2P topic of two others", 4, conversation.Address{Topic: topic.ForPair(1, 2)}, "text", apperr.Forbidden},
		{"P2P to oneself", 1, conversation.Address{ToUser: 1}, "text", apperr.InvalidArgument},
		{"group owner", 1, conversation.Address{Topic: "grp_10"}, "text", apperr.OK},
		{"group admin", 2, conversation.Address{Topic: "grp_10"}, "text", apperr.OK},
		{"group member", 3, conversation.Address{Topic: "grp_10"}, "text", apperr.OK},
		{"group by conversation id", 3, conversation.Address{ConversationID: 1000}, "text", apperr.OK},
		{"group non-member", 5, conversation.Address{Topic: "grp_10"}, "text", apperr.Forbidden},
		{"unknown group", 1, conversation.Address{Topic: "grp_99"}, "text", apperr.Forbidden},
		{"muted member", 4, conversation.Address{Topic: "grp_10"}, "text", apperr.Forbidden},
		{"mute-all: member", 3, conversation.Address{Topic: "grp_20"}, "text", apperr.Forbidden},
		{"mute-all: admin", 2, conversation.Address{Topic: "grp_20"}, "text", apperr.OK},
		{"mute-all: owner", 1, conversation.Address{Topic: "grp_20"}, "text", apperr.OK},
		{"system type from a user", 1, conversation.Address{ToUser: 2}, conversation.SystemType, apperr.Forbidden},
		{"system type from a user in a group", 1, conversation.Address{Topic: "grp_10"}, conversation.SystemType, apperr.Forbidden},
		{"system account to a stranger", 9, conversation.Address{ToUser: 4}, conversation.SystemType, apperr.OK},
		{"system account, plain text", 9, conversation.Address{ToUser: 5}, "text", apperr.OK},
		{"system account to an unknown user", 9, conversation.Address{ToUser: 99}, "text", apperr.NotFound},
		{"system account into a group it is not in", 9, conversation.Address{Topic: "grp_10"}, conversation.SystemType, apperr.OK},
		{"system account into a muted group", 9, conversation.Address{Topic: "grp_20"}, "text", apperr.OK},
		{"system account into an unknown group", 9, conversation.Address{Topic: "grp_99"}, "text", apperr.NotFound},
		{"system account, topic of two others", 9, conversation.Address{Topic: topic.ForPair(1, 2)}, "text", apperr.Forbidden},
		{"no address", 1, conversation.Address{}, "text", apperr.InvalidArgument},
		{"malformed topic", 1, conversation.Address{Topic: "grp_x"}, "text", apperr.InvalidArgument},
		{"unknown conversation id", 1, conversation.Address{ConversationID: 4242}, "text", apperr.NotFound},
	}
	f := newFixture(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := f.resolver.ForSend(context.Background(), tenant, tt.from, tt.addr, tt.msgType)
			if got := apperr.CodeOf(err); got != tt.want {
				t.Fatalf("ForSend = %v (code %d), want code %d", err, got, tt.want)
			}
		})
	}
}

func TestP2PBothDirectionsShareOneConversation(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	a, err := f.resolver.ForSend(ctx, tenant, 1, conversation.Address{ToUser: 3}, "text")
	must(t, err)
	b, err := f.resolver.ForSend(ctx, tenant, 3, conversation.Address{ToUser: 1}, "text")
	must(t, err)
	if a != b || a.Topic != "p2p_1_3" || a.ID == 0 {
		t.Fatalf("conversations %+v and %+v, want one p2p_1_3", a, b)
	}
}

func TestForReadRules(t *testing.T) {
	tests := []struct {
		name string
		user int64
		addr conversation.Address
		want apperr.Code
	}{
		{"group member", 3, conversation.Address{Topic: "grp_10"}, apperr.OK},
		{"muted member still reads", 4, conversation.Address{Topic: "grp_10"}, apperr.OK},
		{"group non-member", 5, conversation.Address{Topic: "grp_10"}, apperr.Forbidden},
		{"P2P pair, no message yet", 1, conversation.Address{Topic: topic.ForPair(1, 2)}, apperr.OK},
		{"P2P pair that blocked still reads its history", 6, conversation.Address{Topic: topic.ForPair(5, 6)}, apperr.OK},
		{"P2P outsider", 3, conversation.Address{Topic: topic.ForPair(1, 2)}, apperr.Forbidden},
	}
	f := newFixture(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := f.resolver.ForRead(context.Background(), tenant, tt.user, tt.addr)
			if got := apperr.CodeOf(err); got != tt.want {
				t.Fatalf("ForRead = %v (code %d), want code %d", err, got, tt.want)
			}
		})
	}
}

func TestMemberMuteExpires(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	send := func() apperr.Code {
		_, err := f.resolver.ForSend(ctx, tenant, 4, conversation.Address{Topic: "grp_10"}, "text")
		return apperr.CodeOf(err)
	}
	if got := send(); got != apperr.Forbidden {
		t.Fatalf("muted member: code %d, want %d", got, apperr.Forbidden)
	}
	// The cached policy stays, but the mute is judged by the clock at each send.
	f.clock.Advance(time.Hour)
	if got := send(); got != apperr.OK {
		t.Fatalf("after the mute ended: code %d, want 0", got)
	}
}

func TestAMuteAlsoSilencesAnAdminDuringMuteAll(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	must(t, f.dir.MuteMember(ctx, tenant, 20, 2, f.clock.Now().Add(time.Minute)))
	f.resolver.InvalidateGroup(tenant, "grp_20")
	_, err := f.resolver.ForSend(ctx, tenant, 2, conversation.Address{Topic: "grp_20"}, "text")
	if apperr.CodeOf(err) != apperr.Forbidden {
		t.Fatalf("muted admin: err = %v, want 40301", err)
	}
}

func TestGroupRulesAreCachedUntilInvalidated(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	send := func(user int64) apperr.Code {
		_, err := f.resolver.ForSend(ctx, tenant, user, conversation.Address{Topic: "grp_10"}, "text")
		return apperr.CodeOf(err)
	}
	for range 5 {
		if got := send(3); got != apperr.OK {
			t.Fatalf("member send: code %d", got)
		}
	}
	if n := f.dir.policies.Load(); n != 1 {
		t.Fatalf("group policy read %d times for 5 sends, want once", n)
	}

	// A change made elsewhere shows once the cache expires; one made here at once.
	must(t, f.dir.SetMuteAll(ctx, tenant, 10, true))
	if got := send(3); got != apperr.OK {
		t.Fatalf("stale cache: code %d, want 0 until it expires", got)
	}
	f.clock.Advance(time.Minute)
	if got := send(3); got != apperr.Forbidden {
		t.Fatalf("after expiry: code %d, want %d", got, apperr.Forbidden)
	}
	must(t, f.dir.SetMuteAll(ctx, tenant, 10, false))
	f.resolver.InvalidateGroup(tenant, "grp_10")
	if got := send(3); got != apperr.OK {
		t.Fatalf("after invalidation: code %d, want 0", got)
	}

	// A removed member can neither send nor read once the group is invalidated.
	must(t, f.dir.RemoveMembers(ctx, tenant, 10, []int64{3}, 0))
	f.resolver.InvalidateGroup(tenant, "grp_10")
	if got := send(3); got != apperr.Forbidden {
		t.Fatalf("removed member send: code %d, want %d", got, apperr.Forbidden)
	}
	if _, err := f.resolver.ForRead(ctx, tenant, 3, conversation.Address{Topic: "grp_10"}); apperr.CodeOf(err) != apperr.Forbidden {
		t.Fatalf("removed member read: err = %v, want 40301", err)
	}
}

func TestPairRulesCacheOnlyWhatAllows(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	send := func(from, to int64) apperr.Code {
		_, err := f.resolver.ForSend(ctx, tenant, from, conversation.Address{ToUser: to}, "text")
		return apperr.CodeOf(err)
	}
	// A refusal is not cached: a new friendship works at once, even made elsewhere.
	if got := send(2, 3); got != apperr.Forbidden {
		t.Fatalf("strangers: code %d", got)
	}
	must(t, f.dir.AddFriendship(ctx, tenant, 2, 3))
	if got := send(2, 3); got != apperr.OK {
		t.Fatalf("new friends: code %d, want 0", got)
	}
	// An allowed pair is cached: a block made here invalidates it.
	must(t, f.dir.Block(ctx, tenant, 3, 2))
	f.resolver.InvalidatePair(tenant, 3, 2)
	if got := send(2, 3); got != apperr.Forbidden {
		t.Fatalf("after block: code %d, want %d", got, apperr.Forbidden)
	}
}
