package contract

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/social"
	"github.com/imdhq/imd/ports"
)

// DirectoryFactory returns a directory and an empty tenant.
type DirectoryFactory func(t *testing.T) (dir ports.Directory, tenant string)

// Directory runs the directory contract: users, friends, groups, members and the one
// conversation of a P2P pair.
func Directory(t *testing.T, newDir DirectoryFactory) {
	cases := []struct {
		name string
		run  func(t *testing.T, d ports.Directory, tenant string)
	}{
		{"users", users},
		{"disabled and deleted users", userStatus},
		{"friendships are symmetric", friendships},
		{"groups with members", groups},
		{"adding members", addingMembers},
		{"unknown conversations", unknownConversations},
		{"a P2P pair has one conversation", p2pPair},
		{"racing P2P creators agree", p2pRace},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, tenant := newDir(t)
			c.run(t, d, tenant)
		})
	}
}

func users(t *testing.T, d ports.Directory, tenant string) {
	ctx := context.Background()
	if ok, err := d.UserExists(ctx, tenant, 1); err != nil || ok {
		t.Fatalf("UserExists of nobody = %v, %v", ok, err)
	}
	for range 2 { // creating again is harmless
		if err := d.CreateUser(ctx, tenant, social.User{ID: 1, Nickname: "ann"}); err != nil {
			t.Fatalf("CreateUser: %v", err)
		}
	}
	if ok, err := d.UserExists(ctx, tenant, 1); err != nil || !ok {
		t.Fatalf("UserExists = %v, %v; want true", ok, err)
	}
	if err := d.CreateUser(ctx, tenant, social.User{ID: 0}); err == nil {
		t.Fatal("CreateUser with id 0 succeeded")
	}
}

// userStatus walks a user through every status: a disabled user exists, a deleted one does
// not and never comes back, not even by creating it again (DESIGN §8.1).
func userStatus(t *testing.T, d ports.Directory, tenant string) {
	ctx := context.Background()
	if st, err := d.UserStatus(ctx, tenant, 5); err != nil || st != social.UserUnknown {
		t.Fatalf("UserStatus of nobody = %v, %v", st, err)
	}
	if err := d.SetUserStatus(ctx, tenant, 5, social.UserDisabled); !errors.Is(err, social.ErrNotFound) {
		t.Fatalf("SetUserStatus of nobody = %v, want social.ErrNotFound", err)
	}
	if err := d.CreateUser(ctx, tenant, social.User{ID: 5, Nickname: "eve"}); err != nil {
		t.Fatal(err)
	}
	if err := d.SetUserStatus(ctx, tenant, 5, social.UserUnknown); apperr.CodeOf(err) != apperr.InvalidArgument {
		t.Fatalf("SetUserStatus(unknown) = %v, want 40001", err)
	}
	steps := []struct {
		to      social.UserStatus
		err     error
		want    social.UserStatus
		exists  bool
		comment string
	}{
		{social.UserActive, nil, social.UserActive, true, "created users are active"},
		{social.UserDisabled, nil, social.UserDisabled, true, "disable"},
		{social.UserDisabled, nil, social.UserDisabled, true, "disable again"},
		{social.UserActive, nil, social.UserActive, true, "enable"},
		{social.UserDeleted, nil, social.UserDeleted, false, "delete"},
		{social.UserDeleted, nil, social.UserDeleted, false, "delete again"},
		{social.UserActive, social.ErrUserDeleted, social.UserDeleted, false, "a deleted user is not enabled"},
		{social.UserDisabled, social.ErrUserDeleted, social.UserDeleted, false, "nor disabled"},
	}
	for _, s := range steps {
		if err := d.SetUserStatus(ctx, tenant, 5, s.to); !errors.Is(err, s.err) {
			t.Fatalf("%s: SetUserStatus(%v) = %v, want %v", s.comment, s.to, err, s.err)
		}
		if st, err := d.UserStatus(ctx, tenant, 5); err != nil || st != s.want {
			t.Fatalf("%s: UserStatus = %v, %v; want %v", s.comment, st, err, s.want)
		}
		if ok, err := d.UserExists(ctx, tenant, 5); err != nil || ok != s.exists {
			t.Fatalf("%s: UserExists = %v, %v; want %v", s.comment, ok, err, s.exists)
		}
	}
	if err := d.CreateUser(ctx, tenant, social.User{ID: 5, Nickname: "eve again"}); err != nil {
		t.Fatal(err)
	}
	if st, err := d.UserStatus(ctx, tenant, 5); err != nil || st != social.UserDeleted {
		t.Fatalf("creating a deleted user again: status %v, %v; want it to stay deleted", st, err)
	}
}

func friendships(t *testing.T, d ports.Directory, tenant string) {
	ctx := context.Background()
	for range 2 {
		if err := d.AddFriendship(ctx, tenant, 9, 3); err != nil {
			t.Fatalf("AddFriendship: %v", err)
		}
	}
	cases := []struct {
		a, b int64
		want bool
	}{{3, 9, true}, {9, 3, true}, {3, 4, false}, {9, 9, false}}
	for _, c := range cases {
		if ok, err := d.AreFriends(ctx, tenant, c.a, c.b); err != nil || ok != c.want {
			t.Errorf("AreFriends(%d, %d) = %v, %v; want %v", c.a, c.b, ok, err, c.want)
		}
	}
	if err := d.AddFriendship(ctx, tenant, 5, 5); err == nil {
		t.Fatal("AddFriendship with oneself succeeded")
	}
}

func groups(t *testing.T, d ports.Directory, tenant string) {
	ctx := context.Background()
	conv, err := d.CreateGroup(ctx, tenant, social.Group{ID: 42, Owner: 1, Name: "team"}, 4200, []int64{3, 2, 1}, 0)
	if err != nil {
		t.Fatalf("CreateGroup: %v", err)
	}
	want := social.Conversation{ID: 4200, Topic: "grp_42", Kind: social.KindGroup, GroupID: 42}
	sameConversation(t, conv, want)
	byTopic, err := d.Conversation(ctx, tenant, "grp_42")
	if err != nil {
		t.Fatalf("Conversation: %v", err)
	}
	sameConversation(t, byTopic, want)
	byID, err := d.ConversationByID(ctx, tenant, 4200)
	if err != nil {
		t.Fatalf("ConversationByID: %v", err)
	}
	sameConversation(t, byID, want)
	wantMembers(t, d, tenant, "grp_42", 1, 2, 3)
	for _, c := range []struct {
		user int64
		want bool
	}{{1, true}, {3, true}, {4, false}} {
		if ok, err := d.IsMember(ctx, tenant, "grp_42", c.user); err != nil || ok != c.want {
			t.Errorf("IsMember(%d) = %v, %v; want %v", c.user, ok, err, c.want)
		}
	}

	_, err = d.CreateGroup(ctx, tenant, social.Group{ID: 42, Owner: 5}, 4201, nil, 0)
	if apperr.CodeOf(err) != apperr.Conflict {
		t.Fatalf("CreateGroup of a known group: err = %v, want code %d", err, apperr.Conflict)
	}
	_, err = d.CreateGroup(ctx, tenant, social.Group{ID: 43, Owner: 5}, 4200, nil, 0)
	if apperr.CodeOf(err) != apperr.Conflict {
		t.Fatalf("CreateGroup on a taken conversation id: err = %v, want code %d", err, apperr.Conflict)
	}
	if _, err := d.Conversation(ctx, tenant, "grp_43"); !errors.Is(err, social.ErrNotFound) {
		t.Fatalf("a failed CreateGroup left its conversation: err = %v", err)
	}
}

func addingMembers(t *testing.T, d ports.Directory, tenant string) {
	ctx := context.Background()
	if _, err := d.CreateGroup(ctx, tenant, social.Group{ID: 7, Owner: 1}, 700, nil, 0); err != nil {
		t.Fatalf("CreateGroup: %v", err)
	}
	wantMembers(t, d, tenant, "grp_7", 1)
	if err := d.AddMembers(ctx, tenant, "grp_7", []int64{5, 4, 1}, 0); err != nil {
		t.Fatalf("AddMembers: %v", err)
	}
	wantMembers(t, d, tenant, "grp_7", 1, 4, 5)
	if err := d.AddMembers(ctx, tenant, "grp_8", []int64{5}, 0); !errors.Is(err, social.ErrNotFound) {
		t.Fatalf("AddMembers to an unknown group: err = %v, want social.ErrNotFound", err)
	}
	if err := d.AddMembers(ctx, tenant, "p2p_1_2", []int64{5}, 0); err == nil {
		t.Fatal("AddMembers to a P2P topic succeeded")
	}
}

func unknownConversations(t *testing.T, d ports.Directory, tenant string) {
	ctx := context.Background()
	if _, err := d.Conversation(ctx, tenant, "grp_1"); !errors.Is(err, social.ErrNotFound) {
		t.Fatalf("Conversation: err = %v, want social.ErrNotFound", err)
	}
	if _, err := d.ConversationByID(ctx, tenant, 1); !errors.Is(err, social.ErrNotFound) {
		t.Fatalf("ConversationByID: err = %v, want social.ErrNotFound", err)
	}
	wantMembers(t, d, tenant, "grp_1")
	if ok, err := d.IsMember(ctx, tenant, "grp_1", 1); err != nil || ok {
		t.Fatalf("IsMember of an unknown group = %v, %v", ok, err)
	}
}

func p2pPair(t *testing.T, d ports.Directory, tenant string) {
	ctx := context.Background()
	want := social.Conversation{ID: 900, Topic: "p2p_3_8", Kind: social.KindP2P}
	first, err := d.EnsureP2P(ctx, tenant, 8, 3, 900)
	if err != nil {
		t.Fatalf("EnsureP2P: %v", err)
	}
	sameConversation(t, first, want)
	again, err := d.EnsureP2P(ctx, tenant, 3, 8, 901) // the other user, another fresh id
	if err != nil {
		t.Fatalf("EnsureP2P again: %v", err)
	}
	sameConversation(t, again, want)
	byTopic, err := d.Conversation(ctx, tenant, "p2p_3_8")
	if err != nil {
		t.Fatalf("Conversation: %v", err)
	}
	sameConversation(t, byTopic, want)
	wantMembers(t, d, tenant, "p2p_3_8", 3, 8)
	for _, c := range []struct {
		user int64
		want bool
	}{{3, true}, {8, true}, {4, false}} {
		if ok, err := d.IsMember(ctx, tenant, "p2p_3_8", c.user); err != nil || ok != c.want {
			t.Errorf("IsMember(%d) = %v, %v; want %v", c.user, ok, err, c.want)
		}
	}
	if _, err := d.EnsureP2P(ctx, tenant, 3, 3, 902); err == nil {
		t.Fatal("EnsureP2P with oneself succeeded")
	}
}

func p2pRace(t *testing.T, d ports.Directory, tenant string) {
	ctx := context.Background()
	const racers = 10
	ids := make([]int64, racers)
	var wg sync.WaitGroup
	for i := range racers {
		wg.Go(func() {
			a, b := int64(5), int64(6)
			if i%2 == 1 {
				a, b = b, a
			}
			c, err := d.EnsureP2P(ctx, tenant, a, b, int64(1000+i))
			if err != nil {
				t.Errorf("EnsureP2P: %v", err)
				return
			}
			ids[i] = c.ID
		})
	}
	wg.Wait()
	for i, id := range ids {
		if id != ids[0] || id < 1000 || id >= 1000+racers {
			t.Fatalf("racer %d got conversation %d, racer 0 got %d", i, id, ids[0])
		}
	}
}

func sameConversation(t *testing.T, got, want social.Conversation) {
	t.Helper()
	if got.CreatedAt.IsZero() {
		t.Fatalf("conversation %d has no CreatedAt", got.ID)
	}
	got.CreatedAt = want.CreatedAt
	if got != want {
		t.Fatalf("conversation = %+v, want %+v", got, want)
	}
}

func wantMembers(t *testing.T, d ports.Directory, tenant, topicName string, want ...int64) {
	t.Helper()
	got, err := d.Members(context.Background(), tenant, topicName)
	if err != nil {
		t.Fatalf("Members %s: %v", topicName, err)
	}
	if fmt.Sprint(got) != fmt.Sprint(append([]int64{}, want...)) {
		t.Fatalf("Members %s = %v, want %v", topicName, got, want)
	}
}
