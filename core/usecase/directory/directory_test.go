package directory_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/memory"
	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/mailbox"
	"github.com/imdhq/imd/core/domain/social"
	"github.com/imdhq/imd/core/store/membership"
	"github.com/imdhq/imd/core/usecase/conversation"
	"github.com/imdhq/imd/core/usecase/directory"
)

const tenant = "acme"

// events records what the directory posts.
type events struct {
	mu  sync.Mutex
	got []mailbox.Event
}

func (e *events) Post(_ context.Context, _ string, evs []mailbox.Event) ([]mailbox.Event, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.got = append(e.got, evs...)
	return evs, nil
}

// take returns the events posted since the last take, as "user type action" strings.
func (e *events) take(t *testing.T) []string {
	t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, ev := range e.got {
		var p struct {
			Action string `json:"action"`
		}
		if err := json.Unmarshal(ev.Payload, &p); err != nil {
			t.Fatalf("payload %s: %v", ev.Payload, err)
		}
		out = append(out, strconv.FormatInt(ev.User, 10)+" "+ev.Type.String()+" "+p.Action)
	}
	e.got = nil
	slices.Sort(out)
	return out
}

type fixture struct {
	svc      *directory.Service
	dir      *memory.Directory
	resolver *conversation.Resolver
	events   *events
	hooks    *memory.WebhookEvents // the webhook events the directory's changes recorded
	clock    *memory.Clock
	ended    *endings
}

// newFixture has users 1–6; group 10 is owned by 1 with admin 2 and members 3, 4.
func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	clock := memory.NewClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	hooks := memory.NewWebhookEvents()
	dir := memory.NewDirectory().RecordEventsIn(hooks)
	for id := int64(1); id <= 6; id++ {
		if err := dir.CreateUser(ctx, tenant, social.User{ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	ids := memory.NewIDs(clock)
	resolver := conversation.NewResolver(dir, ids, membership.New(dir, clock, time.Hour),
		conversation.WithClock(clock), conversation.WithRulesTTL(time.Hour))
	ev, ended := &events{}, &endings{}
	svc := directory.New(directory.Deps{
		Directory: dir, Profiles: dir, Friends: dir, Blocks: dir, Groups: dir, Resolver: resolver,
		IDs: ids, Clock: clock, Events: ev, Sessions: ended, Log: slog.New(slog.DiscardHandler),
	})
	if _, err := svc.CreateGroup(ctx, tenant, directory.Operator, directory.NewGroup{ID: 10, Owner: 1, Members: []int64{2, 3, 4}}); err != nil {
		t.Fatal(err)
	}
	if err := svc.SetRole(ctx, tenant, directory.Operator, 10, 2, social.RoleAdmin); err != nil {
		t.Fatal(err)
	}
	ev.take(t)
	return &fixture{svc: svc, dir: dir, resolver: resolver, events: ev, hooks: hooks, clock: clock, ended: ended}
}

func wantCode(t *testing.T, err error, want apperr.Code) {
	t.Helper()
	if got := apperr.CodeOf(err); got != want {
		t.Fatalf("err = %v (code %d), want code %d", err, got, want)
	}
}

func TestGroupManagementRules(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		act  func(s *directory.Service) error
		want apperr.Code
	}{
		{"owner adds", func(s *directory.Service) error { return s.AddMembers(ctx, tenant, 1, 10, []int64{5}) }, apperr.OK},
		{"admin adds", func(s *directory.Service) error { return s.AddMembers(ctx, tenant, 2, 10, []int64{5}) }, apperr.OK},
		{"member cannot add", func(s *directory.Service) error { return s.AddMembers(ctx, tenant, 3, 10, []int64{5}) }, apperr.Forbidden},
		{"outsider cannot add", func(s *directory.Service) error { return s.AddMembers(ctx, tenant, 6, 10, []int64{5}) }, apperr.Forbidden},
		{"adding an unknown user", func(s *directory.Service) error { return s.AddMembers(ctx, tenant, 1, 10, []int64{99}) }, apperr.NotFound},
		{"adding to an unknown group", func(s *directory.Service) error { return s.AddMembers(ctx, tenant, 1, 11, []int64{5}) }, apperr.NotFound},
		{"owner removes an admin", func(s *directory.Service) error { return s.RemoveMember(ctx, tenant, 1, 10, 2) }, apperr.OK},
		{"admin removes a member", func(s *directory.Service) error { return s.RemoveMember(ctx, tenant, 2, 10, 3) }, apperr.OK},
		{"admin cannot remove the owner", func(s *directory.Service) error { return s.RemoveMember(ctx, tenant, 2, 10, 1) }, apperr.Forbidden},
		{"member cannot remove a member", func(s *directory.Service) error { return s.RemoveMember(ctx, tenant, 3, 10, 4) }, apperr.Forbidden},
		{"member leaves", func(s *directory.Service) error { return s.RemoveMember(ctx, tenant, 3, 10, 3) }, apperr.OK},
		{"owner cannot leave", func(s *directory.Service) error { return s.RemoveMember(ctx, tenant, 1, 10, 1) }, apperr.Forbidden},
		{"operator cannot remove the owner", func(s *directory.Service) error { return s.RemoveMember(ctx, tenant, directory.Operator, 10, 1) }, apperr.Forbidden},
		{"removing a non-member", func(s *directory.Service) error { return s.RemoveMember(ctx, tenant, 1, 10, 5) }, apperr.NotFound},
		{"owner makes an admin", func(s *directory.Service) error { return s.SetRole(ctx, tenant, 1, 10, 3, social.RoleAdmin) }, apperr.OK},
		{"admin cannot make an admin", func(s *directory.Service) error { return s.SetRole(ctx, tenant, 2, 10, 3, social.RoleAdmin) }, apperr.Forbidden},
		{"nobody makes an owner", func(s *directory.Service) error { return s.SetRole(ctx, tenant, 1, 10, 3, social.RoleOwner) }, apperr.InvalidArgument},
		{"the owner's role is fixed", func(s *directory.Service) error {
			return s.SetRole(ctx, tenant, directory.Operator, 10, 1, social.RoleMember)
		}, apperr.Forbidden},
		{"owner mutes an admin", func(s *directory.Service) error { return s.MuteMember(ctx, tenant, 1, 10, 2, time.Hour) }, apperr.OK},
		{"admin mutes a member", func(s *directory.Service) error { return s.MuteMember(ctx, tenant, 2, 10, 3, time.Hour) }, apperr.OK},
		{"admin cannot mute the owner", func(s *directory.Service) error { return s.MuteMember(ctx, tenant, 2, 10, 1, time.Hour) }, apperr.Forbidden},
		{"member cannot mute", func(s *directory.Service) error { return s.MuteMember(ctx, tenant, 3, 10, 4, time.Hour) }, apperr.Forbidden},
		{"mute too long", func(s *directory.Service) error { return s.MuteMember(ctx, tenant, 1, 10, 3, 400*24*time.Hour) }, apperr.InvalidArgument},
		{"owner mutes all", func(s *directory.Service) error { return s.SetMuteAll(ctx, tenant, 1, 10, true) }, apperr.OK},
		{"admin mutes all", func(s *directory.Service) error { return s.SetMuteAll(ctx, tenant, 2, 10, true) }, apperr.OK},
		{"member cannot mute all", func(s *directory.Service) error { return s.SetMuteAll(ctx, tenant, 3, 10, true) }, apperr.Forbidden},
		{"member reads the group", func(s *directory.Service) error { _, err := s.Group(ctx, tenant, 3, 10); return err }, apperr.OK},
		{"outsider cannot read the group", func(s *directory.Service) error { _, err := s.Group(ctx, tenant, 6, 10); return err }, apperr.Forbidden},
		{"outsider cannot list members", func(s *directory.Service) error { _, err := s.Members(ctx, tenant, 6, 10, 0, 0); return err }, apperr.Forbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantCode(t, tt.act(newFixture(t).svc), tt.want)
		})
	}
}

func TestMembershipChangesReachSendsAndMailboxes(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	canSend := func(user int64) apperr.Code {
		_, err := f.resolver.ForSend(ctx, tenant, user, conversation.Address{Topic: "grp_10"}, "text")
		return apperr.CodeOf(err)
	}
	if canSend(3) != apperr.OK || canSend(5) != apperr.Forbidden {
		t.Fatal("fixture: 3 sends, 5 does not")
	}
	wantCode(t, f.svc.AddMembers(ctx, tenant, 2, 10, []int64{5}), apperr.OK)
	if got := canSend(5); got != apperr.OK {
		t.Fatalf("added member: code %d", got)
	}
	wantCode(t, f.svc.SetMuteAll(ctx, tenant, 1, 10, true), apperr.OK)
	if canSend(3) != apperr.Forbidden || canSend(2) != apperr.OK || canSend(1) != apperr.OK {
		t.Fatal("mute-all must stop members, not owner and admins")
	}
	wantCode(t, f.svc.SetMuteAll(ctx, tenant, 1, 10, false), apperr.OK)
	wantCode(t, f.svc.MuteMember(ctx, tenant, 1, 10, 3, time.Minute), apperr.OK)
	if got := canSend(3); got != apperr.Forbidden {
		t.Fatalf("muted member: code %d", got)
	}
	f.clock.Advance(time.Minute)
	if got := canSend(3); got != apperr.OK {
		t.Fatalf("after the mute: code %d", got)
	}
	wantCode(t, f.svc.RemoveMember(ctx, tenant, 1, 10, 3), apperr.OK)
	if got := canSend(3); got != apperr.Forbidden {
		t.Fatalf("removed member: code %d", got)
	}
	want := []string{"3 member muted", "3 member removed", "5 member added"}
	if got := f.events.take(t); !slices.Equal(got, want) {
		t.Fatalf("events = %v, want %v", got, want)
	}
}

func TestCreateGroupByAUser(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	c, err := f.svc.CreateGroup(ctx, tenant, 5, directory.NewGroup{Owner: 1, Name: "five's", Members: []int64{6}})
	if err != nil {
		t.Fatal(err)
	}
	g, err := f.svc.Group(ctx, tenant, 6, c.GroupID)
	if err != nil || g.Owner != 5 || g.Name != "five's" || g.ConversationID != c.ID {
		t.Fatalf("group = %+v, %v; want owned by its creator 5", g, err)
	}
	if got := f.events.take(t); !slices.Equal(got, []string{"6 member added"}) {
		t.Fatalf("events = %v", got)
	}
	_, err = f.svc.CreateGroup(ctx, tenant, 5, directory.NewGroup{ID: 10})
	wantCode(t, err, apperr.Conflict)
	_, err = f.svc.CreateGroup(ctx, tenant, 5, directory.NewGroup{Members: make([]int64, directory.MaxCreateMembers+1)})
	wantCode(t, err, apperr.InvalidArgument)
	_, err = f.svc.CreateGroup(ctx, tenant, 5, directory.NewGroup{Members: []int64{99}})
	wantCode(t, err, apperr.NotFound)
}

func TestFriendRequests(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	friends, err := f.svc.RequestFriend(ctx, tenant, 1, 2, "hi")
	if err != nil || friends {
		t.Fatalf("RequestFriend = %v, %v; want pending", friends, err)
	}
	if got := f.events.take(t); !slices.Equal(got, []string{"2 friend request"}) {
		t.Fatalf("events = %v", got)
	}
	if _, err := f.resolver.ForSend(ctx, tenant, 1, conversation.Address{ToUser: 2}, "text"); apperr.CodeOf(err) != apperr.Forbidden {
		t.Fatalf("a pending request must not allow P2P: %v", err)
	}
	wantCode(t, f.svc.AcceptFriend(ctx, tenant, 1, 2), apperr.NotFound) // the wrong side accepts
	wantCode(t, f.svc.AcceptFriend(ctx, tenant, 2, 1), apperr.OK)
	if got := f.events.take(t); !slices.Equal(got, []string{"1 friend accepted", "2 friend accepted"}) {
		t.Fatalf("events = %v", got)
	}
	if _, err := f.resolver.ForSend(ctx, tenant, 2, conversation.Address{ToUser: 1}, "text"); err != nil {
		t.Fatalf("friends send: %v", err)
	}

	// Two requests meet: the second makes the friendship.
	if _, err := f.svc.RequestFriend(ctx, tenant, 3, 4, ""); err != nil {
		t.Fatal(err)
	}
	if friends, err := f.svc.RequestFriend(ctx, tenant, 4, 3, ""); err != nil || !friends {
		t.Fatalf("crossing requests = %v, %v; want friends", friends, err)
	}
	f.events.take(t)

	// Declining and withdrawing.
	if _, err := f.svc.RequestFriend(ctx, tenant, 5, 6, ""); err != nil {
		t.Fatal(err)
	}
	wantCode(t, f.svc.DeleteFriendRequest(ctx, tenant, 6, 5), apperr.OK)
	wantCode(t, f.svc.DeleteFriendRequest(ctx, tenant, 6, 5), apperr.NotFound)

	// Blocked pairs cannot ask; ending a friendship stops P2P at once.
	wantCode(t, f.svc.Block(ctx, tenant, 6, 5), apperr.OK)
	_, err = f.svc.RequestFriend(ctx, tenant, 5, 6, "")
	wantCode(t, err, apperr.Forbidden)
	wantCode(t, f.svc.RemoveFriend(ctx, tenant, 1, 2), apperr.OK)
	if _, err := f.resolver.ForSend(ctx, tenant, 2, conversation.Address{ToUser: 1}, "text"); apperr.CodeOf(err) != apperr.Forbidden {
		t.Fatalf("after unfriending: %v", err)
	}
	_, err = f.svc.RequestFriend(ctx, tenant, 1, 1, "")
	wantCode(t, err, apperr.InvalidArgument)
	_, err = f.svc.RequestFriend(ctx, tenant, 1, 99, "")
	wantCode(t, err, apperr.NotFound)
}

func TestBlockStopsAFriendPairAtOnce(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	wantCode(t, f.svc.AddFriendship(ctx, tenant, 1, 2), apperr.OK)
	send := func(from, to int64) apperr.Code {
		_, err := f.resolver.ForSend(ctx, tenant, from, conversation.Address{ToUser: to}, "text")
		return apperr.CodeOf(err)
	}
	if send(1, 2) != apperr.OK {
		t.Fatal("friends must send")
	}
	wantCode(t, f.svc.Block(ctx, tenant, 2, 1), apperr.OK)
	if send(1, 2) != apperr.Forbidden || send(2, 1) != apperr.Forbidden {
		t.Fatal("a block stops both directions")
	}
	if ids, err := f.svc.Blocked(ctx, tenant, 2); err != nil || !slices.Equal(ids, []int64{1}) {
		t.Fatalf("Blocked = %v, %v", ids, err)
	}
	wantCode(t, f.svc.Unblock(ctx, tenant, 2, 1), apperr.OK)
	if send(1, 2) != apperr.OK {
		t.Fatal("unblocked friends must send")
	}
	wantCode(t, f.svc.Block(ctx, tenant, 2, 2), apperr.InvalidArgument)
	wantCode(t, f.svc.Block(ctx, tenant, 2, 99), apperr.NotFound)
}

func TestProfiles(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	tests := []struct {
		name string
		p    social.Profile
		want apperr.Code
	}{
		{"nickname and avatar", social.Profile{UserID: 1, Nickname: "Ann", Avatar: "acme/1/20300101/0123456789abcdef0123456789abcdef.png"}, apperr.OK},
		{"clearing the avatar", social.Profile{UserID: 1, Nickname: "Ann"}, apperr.OK},
		{"nickname too long", social.Profile{UserID: 1, Nickname: string(make([]rune, 65))}, apperr.InvalidArgument},
		{"avatar not an uploaded key", social.Profile{UserID: 1, Avatar: "../etc/passwd"}, apperr.InvalidArgument},
		{"avatar of another tenant", social.Profile{UserID: 1, Avatar: "other/1/20300101/0123456789abcdef0123456789abcdef.png"}, apperr.InvalidArgument},
		{"unknown user", social.Profile{UserID: 99}, apperr.NotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantCode(t, f.svc.UpdateProfile(ctx, tenant, tt.p), tt.want)
		})
	}
	p, err := f.svc.Profile(ctx, tenant, 1)
	if err != nil || p.Nickname != "Ann" || p.Avatar != "" {
		t.Fatalf("Profile = %+v, %v", p, err)
	}
	_, err = f.svc.Profile(ctx, tenant, 99)
	wantCode(t, err, apperr.NotFound)
}

func TestWithoutEventsChangesStillApply(t *testing.T) {
	ctx := context.Background()
	clock := memory.NewClock(time.Now())
	dir := memory.NewDirectory()
	for id := int64(1); id <= 2; id++ {
		if err := dir.CreateUser(ctx, tenant, social.User{ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	ids := memory.NewIDs(clock)
	svc := directory.New(directory.Deps{
		Directory: dir, Profiles: dir, Friends: dir, Blocks: dir, Groups: dir, IDs: ids, Clock: clock,
		Resolver: conversation.NewResolver(dir, ids, membership.New(dir, clock, time.Hour)), Log: slog.New(slog.DiscardHandler),
	})
	wantCode(t, svc.AddFriendship(ctx, tenant, 1, 2), apperr.OK)
	if ok, _ := dir.AreFriends(ctx, tenant, 1, 2); !ok {
		t.Fatal("friendship not made")
	}
}
