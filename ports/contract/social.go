package contract

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/imdhq/imd/core/domain/social"
	"github.com/imdhq/imd/ports"
)

// SocialGraph is everything one social-graph adapter implements.
type SocialGraph interface {
	ports.Directory
	ports.Profiles
	ports.Friends
	ports.Blocks
	ports.SendRules
	ports.Groups
}

// SocialGraphFactory returns a graph and an empty tenant.
type SocialGraphFactory func(t *testing.T) (g SocialGraph, tenant string)

// Social runs the contract of the social graph beyond Directory: profiles, friend lists and
// requests, blocks, the send rules, group roles, mutes and removal.
func Social(t *testing.T, newGraph SocialGraphFactory) {
	cases := []struct {
		name string
		run  func(t *testing.T, g SocialGraph, tenant string)
	}{
		{"profiles", profiles},
		{"friend lists and removal", friendLists},
		{"friend requests", friendRequests},
		{"blocks and relations", blocksAndRelations},
		{"group roles and mutes", groupRolesAndMutes},
		{"removing members", removingMembers},
		{"ownership transfer", ownershipTransfer},
		{"conversations of a user", userConversations},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g, tenant := newGraph(t)
			c.run(t, g, tenant)
		})
	}
}

func mustUsers(t *testing.T, g SocialGraph, tenant string, ids ...int64) {
	t.Helper()
	for _, id := range ids {
		if err := g.CreateUser(context.Background(), tenant, social.User{ID: id, Nickname: fmt.Sprintf("u%d", id)}); err != nil {
			t.Fatalf("CreateUser %d: %v", id, err)
		}
	}
}

func profiles(t *testing.T, g SocialGraph, tenant string) {
	ctx := context.Background()
	if _, err := g.Profile(ctx, tenant, 1); !errors.Is(err, social.ErrNotFound) {
		t.Fatalf("Profile of nobody: err = %v, want social.ErrNotFound", err)
	}
	if err := g.UpdateProfile(ctx, tenant, social.Profile{UserID: 1, Nickname: "x"}); !errors.Is(err, social.ErrNotFound) {
		t.Fatalf("UpdateProfile of nobody: err = %v, want social.ErrNotFound", err)
	}
	mustUsers(t, g, tenant, 1)
	want := social.Profile{UserID: 1, Nickname: "ann", Avatar: "avatars/1.png"}
	for range 2 { // the same profile again changes nothing and is no error
		if err := g.UpdateProfile(ctx, tenant, want); err != nil {
			t.Fatalf("UpdateProfile: %v", err)
		}
	}
	got, err := g.Profile(ctx, tenant, 1)
	if err != nil {
		t.Fatalf("Profile: %v", err)
	}
	got.CreatedAt = time.Time{}
	if got != want {
		t.Fatalf("Profile = %+v, want %+v", got, want)
	}
}

func friendLists(t *testing.T, g SocialGraph, tenant string) {
	ctx := context.Background()
	for _, other := range []int64{2, 9, 7, 3} {
		if err := g.AddFriendship(ctx, tenant, 5, other); err != nil {
			t.Fatalf("AddFriendship: %v", err)
		}
	}
	wantIDs(t, "Friends(5)", func() ([]int64, error) { return g.Friends(ctx, tenant, 5, 0, 100) }, 2, 3, 7, 9)
	wantIDs(t, "Friends(5) after 3, limit 2", func() ([]int64, error) { return g.Friends(ctx, tenant, 5, 3, 2) }, 7, 9)
	wantIDs(t, "Friends(9)", func() ([]int64, error) { return g.Friends(ctx, tenant, 9, 0, 100) }, 5)
	for range 2 {
		if err := g.RemoveFriendship(ctx, tenant, 9, 5, 0); err != nil {
			t.Fatalf("RemoveFriendship: %v", err)
		}
	}
	wantIDs(t, "Friends(5) after removal", func() ([]int64, error) { return g.Friends(ctx, tenant, 5, 0, 100) }, 2, 3, 7)
	if ok, err := g.AreFriends(ctx, tenant, 5, 9); err != nil || ok {
		t.Fatalf("AreFriends after removal = %v, %v", ok, err)
	}
}

func friendRequests(t *testing.T, g SocialGraph, tenant string) {
	ctx := context.Background()
	base := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	reqs := []social.FriendRequest{
		{From: 1, To: 2, Message: "hi", CreatedAt: base},
		{From: 3, To: 2, Message: "hey", CreatedAt: base.Add(time.Second)},
		{From: 2, To: 4, CreatedAt: base.Add(2 * time.Second)},
	}
	for _, r := range reqs {
		if err := g.RequestFriend(ctx, tenant, r); err != nil {
			t.Fatalf("RequestFriend: %v", err)
		}
	}
	again := social.FriendRequest{From: 1, To: 2, Message: "hello again", CreatedAt: base.Add(3 * time.Second)}
	if err := g.RequestFriend(ctx, tenant, again); err != nil {
		t.Fatalf("RequestFriend again: %v", err)
	}
	in, err := g.FriendRequests(ctx, tenant, 2, true, 10)
	if err != nil {
		t.Fatalf("FriendRequests in: %v", err)
	}
	if len(in) != 2 || in[0] != again || in[1] != reqs[1] {
		t.Fatalf("incoming requests of 2 = %+v, want [%+v %+v]", in, again, reqs[1])
	}
	out, err := g.FriendRequests(ctx, tenant, 2, false, 10)
	if err != nil || len(out) != 1 || out[0] != reqs[2] {
		t.Fatalf("outgoing requests of 2 = %+v, %v; want [%+v]", out, err, reqs[2])
	}
	if err := g.AcceptFriendRequest(ctx, tenant, 1, 2); err != nil {
		t.Fatalf("AcceptFriendRequest: %v", err)
	}
	if ok, err := g.AreFriends(ctx, tenant, 2, 1); err != nil || !ok {
		t.Fatalf("AreFriends after accept = %v, %v", ok, err)
	}
	if err := g.AcceptFriendRequest(ctx, tenant, 1, 2); !errors.Is(err, social.ErrNotFound) {
		t.Fatalf("accepting twice: err = %v, want social.ErrNotFound", err)
	}
	if err := g.AcceptFriendRequest(ctx, tenant, 2, 3); !errors.Is(err, social.ErrNotFound) {
		t.Fatalf("accepting the wrong direction: err = %v, want social.ErrNotFound", err)
	}
	if ok, err := g.AreFriends(ctx, tenant, 2, 3); err != nil || ok {
		t.Fatalf("a failed accept made friends: %v, %v", ok, err)
	}
	if found, err := g.DeleteFriendRequest(ctx, tenant, 3, 2); err != nil || !found {
		t.Fatalf("DeleteFriendRequest = %v, %v; want true", found, err)
	}
	if found, err := g.DeleteFriendRequest(ctx, tenant, 3, 2); err != nil || found {
		t.Fatalf("DeleteFriendRequest again = %v, %v; want false", found, err)
	}
	if in, err := g.FriendRequests(ctx, tenant, 2, true, 10); err != nil || len(in) != 0 {
		t.Fatalf("incoming requests of 2 at the end = %+v, %v", in, err)
	}
}

func blocksAndRelations(t *testing.T, g SocialGraph, tenant string) {
	ctx := context.Background()
	if err := g.AddFriendship(ctx, tenant, 1, 2); err != nil {
		t.Fatalf("AddFriendship: %v", err)
	}
	wantRelation := func(a, b int64, want social.Relation) {
		t.Helper()
		got, err := g.Relation(ctx, tenant, a, b)
		if err != nil || got != want {
			t.Fatalf("Relation(%d, %d) = %+v, %v; want %+v", a, b, got, err, want)
		}
	}
	wantRelation(1, 2, social.Relation{Friends: true})
	wantRelation(1, 3, social.Relation{})
	for range 2 {
		if err := g.Block(ctx, tenant, 2, 1); err != nil {
			t.Fatalf("Block: %v", err)
		}
	}
	if err := g.Block(ctx, tenant, 2, 5); err != nil {
		t.Fatalf("Block: %v", err)
	}
	wantRelation(1, 2, social.Relation{Friends: true, Blocked: true})
	wantRelation(2, 1, social.Relation{Friends: true, Blocked: true})
	wantRelation(3, 2, social.Relation{})
	wantIDs(t, "Blocked(2)", func() ([]int64, error) { return g.Blocked(ctx, tenant, 2) }, 1, 5)
	wantIDs(t, "Blocked(1)", func() ([]int64, error) { return g.Blocked(ctx, tenant, 1) })
	for range 2 {
		if err := g.Unblock(ctx, tenant, 2, 1); err != nil {
			t.Fatalf("Unblock: %v", err)
		}
	}
	wantRelation(1, 2, social.Relation{Friends: true})
	wantIDs(t, "Blocked(2) after unblock", func() ([]int64, error) { return g.Blocked(ctx, tenant, 2) }, 5)
}

func groupRolesAndMutes(t *testing.T, g SocialGraph, tenant string) {
	ctx := context.Background()
	now := time.Date(2030, 5, 6, 7, 8, 9, 0, time.UTC)
	if _, err := g.CreateGroup(ctx, tenant, social.Group{ID: 10, Owner: 1, Name: "team"}, 1000, []int64{2, 3, 4}, 0); err != nil {
		t.Fatalf("CreateGroup: %v", err)
	}
	info, err := g.Group(ctx, tenant, 10)
	if err != nil || info.ID != 10 || info.Owner != 1 || info.Name != "team" || info.ConversationID != 1000 || info.MuteAll || info.CreatedAt.IsZero() {
		t.Fatalf("Group = %+v, %v", info, err)
	}
	wantPolicy(t, g, tenant, 10, now, social.GroupPolicy{Special: []social.Member{{UserID: 1, Role: social.RoleOwner}}})

	if err := g.SetRole(ctx, tenant, 10, 2, social.RoleAdmin); err != nil {
		t.Fatalf("SetRole: %v", err)
	}
	if err := g.SetRole(ctx, tenant, 10, 2, social.RoleAdmin); err != nil { // unchanged is fine
		t.Fatalf("SetRole again: %v", err)
	}
	until := now.Add(time.Hour)
	if err := g.MuteMember(ctx, tenant, 10, 3, until); err != nil {
		t.Fatalf("MuteMember: %v", err)
	}
	if err := g.MuteMember(ctx, tenant, 10, 4, now.Add(-time.Minute)); err != nil { // already over
		t.Fatalf("MuteMember in the past: %v", err)
	}
	if err := g.SetMuteAll(ctx, tenant, 10, true); err != nil {
		t.Fatalf("SetMuteAll: %v", err)
	}
	if err := g.SetMuteAll(ctx, tenant, 10, true); err != nil {
		t.Fatalf("SetMuteAll again: %v", err)
	}
	wantPolicy(t, g, tenant, 10, now, social.GroupPolicy{MuteAll: true, Special: []social.Member{
		{UserID: 1, Role: social.RoleOwner}, {UserID: 2, Role: social.RoleAdmin}, {UserID: 3, Role: social.RoleMember, MutedUntil: until},
	}})
	wantPolicy(t, g, tenant, 10, until, social.GroupPolicy{MuteAll: true, Special: []social.Member{
		{UserID: 1, Role: social.RoleOwner}, {UserID: 2, Role: social.RoleAdmin},
	}})
	// A muted admin is listed once, with both facts.
	if err := g.MuteMember(ctx, tenant, 10, 2, until); err != nil {
		t.Fatalf("MuteMember of an admin: %v", err)
	}
	wantPolicy(t, g, tenant, 10, now, social.GroupPolicy{MuteAll: true, Special: []social.Member{
		{UserID: 1, Role: social.RoleOwner}, {UserID: 2, Role: social.RoleAdmin, MutedUntil: until}, {UserID: 3, Role: social.RoleMember, MutedUntil: until},
	}})
	if err := g.MuteMember(ctx, tenant, 10, 2, time.Time{}); err != nil {
		t.Fatalf("unmute the admin: %v", err)
	}

	m, err := g.GroupMember(ctx, tenant, 10, 3)
	if err != nil || m.Role != social.RoleMember || !m.MutedUntil.Equal(until) {
		t.Fatalf("GroupMember(3) = %+v, %v", m, err)
	}
	if err := g.MuteMember(ctx, tenant, 10, 3, time.Time{}); err != nil {
		t.Fatalf("unmute: %v", err)
	}
	page, err := g.GroupMembers(ctx, tenant, 10, 1, 2)
	if err != nil {
		t.Fatalf("GroupMembers: %v", err)
	}
	got := stripJoined(page)
	want := []social.Member{{UserID: 2, Role: social.RoleAdmin}, {UserID: 3, Role: social.RoleMember}}
	if !slices.Equal(got, want) {
		t.Fatalf("GroupMembers after 1, limit 2 = %+v, want %+v", got, want)
	}

	for _, c := range []struct {
		name string
		err  error
	}{
		{"SetRole of a non-member", g.SetRole(ctx, tenant, 10, 99, social.RoleAdmin)},
		{"MuteMember of a non-member", g.MuteMember(ctx, tenant, 10, 99, until)},
		{"SetMuteAll of an unknown group", g.SetMuteAll(ctx, tenant, 11, true)},
		{"SetRole in an unknown group", g.SetRole(ctx, tenant, 11, 1, social.RoleAdmin)},
	} {
		if !errors.Is(c.err, social.ErrNotFound) {
			t.Errorf("%s: err = %v, want social.ErrNotFound", c.name, c.err)
		}
	}
	if _, err := g.GroupMember(ctx, tenant, 10, 99); !errors.Is(err, social.ErrNotFound) {
		t.Errorf("GroupMember of a non-member: err = %v", err)
	}
	if _, err := g.Group(ctx, tenant, 11); !errors.Is(err, social.ErrNotFound) {
		t.Errorf("Group of an unknown group: err = %v", err)
	}
	if _, err := g.GroupPolicy(ctx, tenant, 11, now); !errors.Is(err, social.ErrNotFound) {
		t.Errorf("GroupPolicy of an unknown group: err = %v", err)
	}
	if err := g.SetRole(ctx, tenant, 10, 2, social.Role("boss")); err == nil {
		t.Error("SetRole with an unknown role succeeded")
	}
}

func ownershipTransfer(t *testing.T, g SocialGraph, tenant string) {
	ctx := context.Background()
	if _, err := g.CreateGroup(ctx, tenant, social.Group{ID: 30, Owner: 1}, 3000, []int64{2, 3}, 0); err != nil {
		t.Fatalf("CreateGroup: %v", err)
	}
	if err := g.SetRole(ctx, tenant, 30, 3, social.RoleAdmin); err != nil {
		t.Fatalf("SetRole: %v", err)
	}
	for _, c := range []struct {
		name     string
		group    int64
		from, to int64
		want     error
	}{
		{"to a non-member", 30, 1, 99, social.ErrNotFound},
		{"of an unknown group", 31, 1, 2, social.ErrNotFound},
		{"by someone not the owner", 30, 2, 3, social.ErrNotOwner},
	} {
		if err := g.TransferOwnership(ctx, tenant, c.group, c.from, c.to); !errors.Is(err, c.want) {
			t.Errorf("TransferOwnership %s: err = %v, want %v", c.name, err, c.want)
		}
	}
	if err := g.TransferOwnership(ctx, tenant, 30, 1, 2); err != nil {
		t.Fatalf("TransferOwnership: %v", err)
	}
	if info, err := g.Group(ctx, tenant, 30); err != nil || info.Owner != 2 {
		t.Fatalf("Group after the transfer = %+v, %v; want owner 2", info, err)
	}
	page, err := g.GroupMembers(ctx, tenant, 30, 0, 10)
	if err != nil {
		t.Fatalf("GroupMembers: %v", err)
	}
	want := []social.Member{{UserID: 1, Role: social.RoleAdmin}, {UserID: 2, Role: social.RoleOwner}, {UserID: 3, Role: social.RoleAdmin}}
	if got := stripJoined(page); !slices.Equal(got, want) {
		t.Fatalf("members after the transfer = %+v, want %+v", got, want)
	}
	// The old owner's second transfer, e.g. a retry or a race, finds it no longer owns the group.
	if err := g.TransferOwnership(ctx, tenant, 30, 1, 3); !errors.Is(err, social.ErrNotOwner) {
		t.Fatalf("a stale transfer: err = %v, want social.ErrNotOwner", err)
	}
}

func removingMembers(t *testing.T, g SocialGraph, tenant string) {
	ctx := context.Background()
	now := time.Now().UTC()
	if _, err := g.CreateGroup(ctx, tenant, social.Group{ID: 20, Owner: 1}, 2000, []int64{2, 3}, 0); err != nil {
		t.Fatalf("CreateGroup: %v", err)
	}
	if err := g.SetRole(ctx, tenant, 20, 2, social.RoleAdmin); err != nil {
		t.Fatalf("SetRole: %v", err)
	}
	if err := g.RemoveMembers(ctx, tenant, 20, []int64{2, 3, 42}, 0); err != nil {
		t.Fatalf("RemoveMembers: %v", err)
	}
	wantMembers(t, g, tenant, "grp_20", 1)
	if ok, err := g.IsMember(ctx, tenant, "grp_20", 2); err != nil || ok {
		t.Fatalf("IsMember of a removed member = %v, %v", ok, err)
	}
	wantPolicy(t, g, tenant, 20, now, social.GroupPolicy{Special: []social.Member{{UserID: 1, Role: social.RoleOwner}}})
	// Adding a removed member again starts afresh: a plain member.
	if err := g.AddMembers(ctx, tenant, "grp_20", []int64{2}, 0); err != nil {
		t.Fatalf("AddMembers: %v", err)
	}
	if m, err := g.GroupMember(ctx, tenant, 20, 2); err != nil || m.Role != social.RoleMember {
		t.Fatalf("re-added member = %+v, %v", m, err)
	}
	if err := g.RemoveMembers(ctx, tenant, 21, []int64{1}, 0); !errors.Is(err, social.ErrNotFound) {
		t.Fatalf("RemoveMembers of an unknown group: err = %v", err)
	}
}

func userConversations(t *testing.T, g SocialGraph, tenant string) {
	ctx := context.Background()
	if _, err := g.CreateGroup(ctx, tenant, social.Group{ID: 30, Owner: 1}, 3000, []int64{2}, 0); err != nil {
		t.Fatalf("CreateGroup: %v", err)
	}
	if _, err := g.CreateGroup(ctx, tenant, social.Group{ID: 31, Owner: 2}, 3100, nil, 0); err != nil {
		t.Fatalf("CreateGroup: %v", err)
	}
	if _, err := g.EnsureP2P(ctx, tenant, 1, 2, 3050); err != nil {
		t.Fatalf("EnsureP2P: %v", err)
	}
	ids := func(kind social.ConversationKind, after int64, limit int) []int64 {
		t.Helper()
		cs, err := g.UserConversations(ctx, tenant, 2, kind, after, limit)
		if err != nil {
			t.Fatalf("UserConversations: %v", err)
		}
		out := make([]int64, len(cs))
		for i, c := range cs {
			out[i] = c.ID
			if c.Topic == "" || c.Kind == 0 {
				t.Fatalf("conversation %+v is incomplete", c)
			}
		}
		return out
	}
	for _, c := range []struct {
		kind  social.ConversationKind
		after int64
		limit int
		want  []int64
	}{
		{0, 0, 10, []int64{3000, 3050, 3100}},
		{0, 3000, 1, []int64{3050}},
		{social.KindGroup, 0, 10, []int64{3000, 3100}},
		{social.KindP2P, 0, 10, []int64{3050}},
	} {
		if got := ids(c.kind, c.after, c.limit); !slices.Equal(got, c.want) {
			t.Errorf("UserConversations(kind %d, after %d, limit %d) = %v, want %v", c.kind, c.after, c.limit, got, c.want)
		}
	}
}

func wantPolicy(t *testing.T, g SocialGraph, tenant string, groupID int64, now time.Time, want social.GroupPolicy) {
	t.Helper()
	got, err := g.GroupPolicy(context.Background(), tenant, groupID, now)
	if err != nil {
		t.Fatalf("GroupPolicy: %v", err)
	}
	special := stripJoined(got.Special)
	slices.SortFunc(special, func(a, b social.Member) int { return cmp.Compare(a.UserID, b.UserID) })
	if got.MuteAll != want.MuteAll || !slices.Equal(special, want.Special) {
		t.Fatalf("GroupPolicy at %s = %+v, want %+v", now, got, want)
	}
}

// stripJoined drops join times, which the fakes do not keep, and normalizes mute times.
func stripJoined(ms []social.Member) []social.Member {
	out := make([]social.Member, len(ms))
	for i, m := range ms {
		m.JoinedAt = time.Time{}
		if !m.MutedUntil.IsZero() {
			m.MutedUntil = m.MutedUntil.UTC()
		}
		out[i] = m
	}
	return out
}

func wantIDs(t *testing.T, what string, get func() ([]int64, error), want ...int64) {
	t.Helper()
	got, err := get()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("%s = %v, want %v", what, got, want)
	}
}
