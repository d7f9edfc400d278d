package directory_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/social"
	"github.com/imdhq/imd/core/usecase/conversation"
	"github.com/imdhq/imd/core/usecase/directory"
)

// endings records the users whose sessions the directory ended, as "user reason"; fail makes
// the next call fail like a node channel that did not take the envelope.
type endings struct {
	got  []string
	fail bool
}

func (e *endings) EndUser(_ context.Context, _ string, user int64, reason string) error {
	e.got = append(e.got, fmt.Sprintf("%d %s", user, reason))
	if e.fail {
		e.fail = false
		return errors.New("node 2-bb not told")
	}
	return nil
}

// TestDisableEnableDelete walks a user through the statuses the admin API sets: each refusal
// has its code, disable and delete end the sessions everywhere, enable needs nobody told, and
// a deleted user is final (DESIGN §8.1).
func TestDisableEnableDelete(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	status := func(want social.UserStatus) {
		t.Helper()
		if st, err := f.svc.UserStatus(ctx, tenant, 5); err != nil || st != want {
			t.Fatalf("status %v, %v; want %v", st, err, want)
		}
	}
	steps := []struct {
		name  string
		act   func() error
		want  apperr.Code
		st    social.UserStatus
		ended []string
	}{
		{"disable", func() error { return f.svc.DisableUser(ctx, tenant, 5) }, apperr.OK, social.UserDisabled, []string{"5 disabled"}},
		{"disable again ends the sessions again", func() error { return f.svc.DisableUser(ctx, tenant, 5) }, apperr.OK, social.UserDisabled, []string{"5 disabled"}},
		{"enable", func() error { return f.svc.EnableUser(ctx, tenant, 5) }, apperr.OK, social.UserActive, nil},
		{"a node not told is 50301, the status stays", func() error { f.ended.fail = true; return f.svc.DisableUser(ctx, tenant, 5) }, apperr.Busy, social.UserDisabled, []string{"5 disabled"}},
		{"delete a disabled user", func() error { return f.svc.DeleteUser(ctx, tenant, 5) }, apperr.OK, social.UserDeleted, []string{"5 deleted"}},
		{"delete again", func() error { return f.svc.DeleteUser(ctx, tenant, 5) }, apperr.OK, social.UserDeleted, []string{"5 deleted"}},
		{"a deleted user is not enabled", func() error { return f.svc.EnableUser(ctx, tenant, 5) }, apperr.Conflict, social.UserDeleted, nil},
		{"nor disabled", func() error { return f.svc.DisableUser(ctx, tenant, 5) }, apperr.Conflict, social.UserDeleted, nil},
	}
	for _, s := range steps {
		f.ended.got = nil
		wantCode(t, s.act(), s.want)
		status(s.st)
		if !slices.Equal(f.ended.got, s.ended) {
			t.Fatalf("%s: sessions ended %v, want %v", s.name, f.ended.got, s.ended)
		}
	}
	for _, act := range []func() error{
		func() error { return f.svc.DisableUser(ctx, tenant, 99) },
		func() error { return f.svc.EnableUser(ctx, tenant, 99) },
		func() error { return f.svc.DeleteUser(ctx, tenant, 99) },
		func() error { _, err := f.svc.UserStatus(ctx, tenant, 99); return err },
	} {
		wantCode(t, act(), apperr.NotFound)
	}
}

// TestDeletedUserLeavesGroupsAndFriends: deleting ends the user's friendships (both learn it)
// and memberships, keeps its P2P conversation readable by the other side, refuses P2P sends
// to it with 40401 and friend requests it left; an owner is 40901 until it hands the group
// over, and nothing changed meanwhile.
func TestDeletedUserLeavesGroupsAndFriends(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	for _, p := range [][2]int64{{3, 5}, {3, 6}} {
		if err := f.svc.AddFriendship(ctx, tenant, p[0], p[1]); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.svc.RequestFriend(ctx, tenant, 3, 4, "hi"); err != nil {
		t.Fatal(err)
	}
	// 3 and 5 have written before: their conversation exists.
	if _, err := f.resolver.ForSend(ctx, tenant, 5, conversation.Address{ToUser: 3}, "text"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.CreateGroup(ctx, tenant, directory.Operator, directory.NewGroup{ID: 11, Owner: 3, Members: []int64{5}}); err != nil {
		t.Fatal(err)
	}
	f.events.take(t)

	wantCode(t, f.svc.DeleteUser(ctx, tenant, 3), apperr.Conflict)
	status := func(want social.UserStatus) {
		t.Helper()
		if st, err := f.svc.UserStatus(ctx, tenant, 3); err != nil || st != want {
			t.Fatalf("status %v, %v; want %v", st, err, want)
		}
	}
	status(social.UserActive)
	if len(f.ended.got) != 0 {
		t.Fatalf("a refused delete ended sessions: %v", f.ended.got)
	}
	if err := f.svc.TransferOwnership(ctx, tenant, directory.Operator, 11, 5); err != nil {
		t.Fatal(err)
	}
	f.events.take(t)
	if err := f.svc.DeleteUser(ctx, tenant, 3); err != nil {
		t.Fatal(err)
	}
	status(social.UserDeleted)

	if friends, err := f.svc.Friends(ctx, tenant, 5, 0, 0); err != nil || len(friends) != 0 {
		t.Fatalf("friends of 5 after 3 was deleted: %v %v", friends, err)
	}
	if got, want := f.events.take(t), []string{"3 friend removed", "3 friend removed", "5 friend removed", "6 friend removed"}; !slices.Equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	for _, g := range []int64{10, 11} {
		if _, err := f.dir.GroupMember(ctx, tenant, g, 3); !errors.Is(err, social.ErrNotFound) {
			t.Fatalf("3 still in group %d: %v", g, err)
		}
	}
	if groups, err := f.svc.UserGroups(ctx, tenant, 3, 0, 0); err != nil || len(groups) != 0 {
		t.Fatalf("groups of the deleted user: %v %v", groups, err)
	}
	_, err := f.resolver.ForSend(ctx, tenant, 5, conversation.Address{ToUser: 3}, "text")
	wantCode(t, err, apperr.NotFound)
	if _, err := f.resolver.ForRead(ctx, tenant, 5, conversation.Address{ToUser: 3}); err != nil {
		t.Fatalf("the other side reads the conversation with the deleted user: %v", err)
	}
	wantCode(t, f.svc.AcceptFriend(ctx, tenant, 4, 3), apperr.NotFound)
	_, err = f.svc.RequestFriend(ctx, tenant, 4, 3, "hi")
	wantCode(t, err, apperr.NotFound)
	wantCode(t, f.svc.AddMembers(ctx, tenant, 1, 10, []int64{3}), apperr.NotFound)
}
