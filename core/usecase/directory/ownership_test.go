package directory_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/memory"
	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/dialog"
	"github.com/imdhq/imd/core/domain/social"
	"github.com/imdhq/imd/core/usecase/conversation"
	"github.com/imdhq/imd/core/usecase/directory"
	"github.com/imdhq/imd/core/usecase/send"
)

// topicEvents records the group events the directory writes into topics.
type topicEvents struct {
	mu  sync.Mutex
	got []send.Event
}

func (p *topicEvents) Publish(_ context.Context, e send.Event) (send.Result, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.got = append(p.got, e)
	return send.Result{}, nil
}

func (p *topicEvents) take() []send.Event {
	p.mu.Lock()
	defer p.mu.Unlock()
	got := p.got
	p.got = nil
	return got
}

// failingDialogs is a list store that is down.
type failingDialogs struct{}

func (failingDialogs) RemoveDialog(context.Context, string, int64, int64) error {
	return errors.New("redis is down")
}

// groupFixture is newFixture's group 10 (owner 1, admin 2, members 3 and 4) behind a service
// that also writes topic events and drops removed members' dialogs.
type groupFixture struct {
	*fixture
	topics  *topicEvents
	dialogs *memory.DialogStore
}

func newGroupFixture(t *testing.T) *groupFixture {
	t.Helper()
	f := newFixture(t)
	g := &groupFixture{fixture: f, topics: &topicEvents{}, dialogs: memory.NewDialogStore(f.clock.Now)}
	f.svc = directory.New(directory.Deps{
		Directory: f.dir, Profiles: f.dir, Friends: f.dir, Blocks: f.dir, Groups: f.dir, Resolver: f.resolver,
		IDs: memory.NewIDs(f.clock), Clock: f.clock, Events: f.events, Topics: g.topics, Dialogs: g.dialogs,
		Log: slog.New(slog.DiscardHandler),
	})
	return g
}

func TestTransferOwnershipRules(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name  string
		actor int64
		group int64
		to    int64
		want  apperr.Code
		owner int64 // the owner afterwards
	}{
		{"the owner hands over to a member", 1, 10, 3, apperr.OK, 3},
		{"the owner hands over to an admin", 1, 10, 2, apperr.OK, 2},
		{"an operator hands over", directory.Operator, 10, 4, apperr.OK, 4},
		{"an admin cannot", 2, 10, 3, apperr.Forbidden, 1},
		{"a member cannot", 3, 10, 4, apperr.Forbidden, 1},
		{"an outsider cannot", 6, 10, 3, apperr.Forbidden, 1},
		{"not to a non-member", 1, 10, 5, apperr.NotFound, 1},
		{"not to the owner", 1, 10, 1, apperr.InvalidArgument, 1},
		{"not to a bad id", 1, 10, 0, apperr.InvalidArgument, 1},
		{"not in an unknown group", 1, 11, 3, apperr.NotFound, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newGroupFixture(t)
			wantCode(t, f.svc.TransferOwnership(ctx, tenant, tt.actor, tt.group, tt.to), tt.want)
			g, err := f.svc.Group(ctx, tenant, directory.Operator, 10)
			if err != nil || g.Owner != tt.owner {
				t.Fatalf("group = %+v, %v; want owner %d", g, err, tt.owner)
			}
		})
	}
}

// TestTheOldOwnerLeavesAfterAHandover: the owner cannot leave, hands the group over, becomes an
// admin, leaves; the new owner runs the group and cannot leave in turn.
func TestTheOldOwnerLeavesAfterAHandover(t *testing.T) {
	ctx := context.Background()
	f := newGroupFixture(t)
	wantCode(t, f.svc.RemoveMember(ctx, tenant, 1, 10, 1), apperr.Forbidden)
	wantCode(t, f.svc.TransferOwnership(ctx, tenant, 1, 10, 3), apperr.OK)
	if got, want := f.events.take(t), []string{"1 member role", "3 member role"}; !slices.Equal(got, want) {
		t.Fatalf("events = %v, want %v", got, want)
	}
	members, err := f.svc.Members(ctx, tenant, 3, 10, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	roles := map[int64]social.Role{}
	for _, m := range members {
		roles[m.UserID] = m.Role
	}
	if roles[1] != social.RoleAdmin || roles[3] != social.RoleOwner {
		t.Fatalf("roles after the handover = %v", roles)
	}
	// The old owner may no longer do what only the owner does.
	wantCode(t, f.svc.SetRole(ctx, tenant, 1, 10, 4, social.RoleAdmin), apperr.Forbidden)
	wantCode(t, f.svc.TransferOwnership(ctx, tenant, 1, 10, 4), apperr.Forbidden)
	wantCode(t, f.svc.RemoveMember(ctx, tenant, 1, 10, 1), apperr.OK)
	wantCode(t, f.svc.RemoveMember(ctx, tenant, 3, 10, 3), apperr.Forbidden)
	wantCode(t, f.svc.SetMuteAll(ctx, tenant, 3, 10, true), apperr.OK)
	if _, err := f.resolver.ForSend(ctx, tenant, 1, conversation.Address{Topic: "grp_10"}, "text"); apperr.CodeOf(err) != apperr.Forbidden {
		t.Fatalf("the old owner sends after leaving: %v", err)
	}
}

func TestMuteAllChangesAreGroupEvents(t *testing.T) {
	ctx := context.Background()
	f := newGroupFixture(t)
	type content struct {
		Event   string `json:"event"`
		MuteAll bool   `json:"mute_all"`
		By      int64  `json:"by"`
	}
	steps := []struct {
		actor int64
		on    bool
		want  []content // the events written
	}{
		{1, true, []content{{"mute_all", true, 1}}},
		{2, true, nil}, // already muted: nothing changes, nothing is announced
		{2, false, []content{{"mute_all", false, 2}}},
		{directory.Operator, true, []content{{"mute_all", true, 0}}},
	}
	for i, s := range steps {
		wantCode(t, f.svc.SetMuteAll(ctx, tenant, s.actor, 10, s.on), apperr.OK)
		evs := f.topics.take()
		if len(evs) != len(s.want) {
			t.Fatalf("step %d: %d events, want %d", i, len(evs), len(s.want))
		}
		for j, e := range evs {
			var got content
			if err := json.Unmarshal(e.Content, &got); err != nil {
				t.Fatalf("step %d: content %s: %v", i, e.Content, err)
			}
			if got != s.want[j] || e.Conversation.Topic != "grp_10" || e.Actor != s.actor || e.Tenant != tenant || e.ClientMsgID == "" {
				t.Fatalf("step %d: event %+v with %+v, want %+v in grp_10 by %d", i, e, got, s.want[j], s.actor)
			}
		}
	}
	if got := f.events.take(t); len(got) != 0 {
		t.Fatalf("mute-all wrote mailbox events %v; it is one event in the topic", got)
	}
}

func TestRemovedMemberLosesTheDialog(t *testing.T) {
	ctx := context.Background()
	f := newGroupFixture(t)
	g, err := f.svc.Group(ctx, tenant, directory.Operator, 10)
	if err != nil {
		t.Fatal(err)
	}
	// A message of the group reached the lists of 3 and 4.
	_, err = f.dialogs.Apply(ctx, tenant, dialog.Update{
		ConversationID: g.ConversationID, Score: 1000, Sender: 1, Once: "m1", OnceTTL: time.Minute,
		Preview: dialog.Preview{Topic: "grp_10", ConversationID: g.ConversationID, Seq: 1},
		Batches: []dialog.Batch{{Users: []int64{3, 4}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, f.svc.RemoveMember(ctx, tenant, 1, 10, 3), apperr.OK)
	for user, want := range map[int64]int{3: 0, 4: 1} {
		if got, err := f.dialogs.Changed(ctx, tenant, user, 0, 10); err != nil || len(got) != want {
			t.Errorf("dialogs of %d = %+v, %v; want %d", user, got, err, want)
		}
	}

	// With the list store down the removal still stands.
	svc := directory.New(directory.Deps{
		Directory: f.dir, Profiles: f.dir, Friends: f.dir, Blocks: f.dir, Groups: f.dir, Resolver: f.resolver,
		IDs: memory.NewIDs(f.clock), Clock: f.clock, Dialogs: failingDialogs{}, Log: slog.New(slog.DiscardHandler),
	})
	wantCode(t, svc.RemoveMember(ctx, tenant, 4, 10, 4), apperr.OK)
	if _, err := f.dir.GroupMember(ctx, tenant, 10, 4); !errors.Is(err, social.ErrNotFound) {
		t.Fatalf("member 4 after leaving: %v", err)
	}
}
