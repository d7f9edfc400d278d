package directory_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/imdhq/imd/core/usecase/directory"
)

// hookEvents returns the webhook events recorded after id after as "type users friends by"
// strings, and the last id.
func (f *fixture) hookEvents(t *testing.T, after int64) ([]string, int64) {
	t.Helper()
	recs, err := f.hooks.EventsAfter(context.Background(), tenant, after, time.Time{}, time.Now().Add(time.Hour), 100)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(recs))
	for i, r := range recs {
		var d struct {
			Users   []int64 `json:"user_ids"`
			Friends bool    `json:"friends"`
			By      *int64  `json:"by"`
		}
		if err := json.Unmarshal(r.Data, &d); err != nil {
			t.Fatalf("record %s: %v", r.Data, err)
		}
		by := "no by"
		if d.By != nil {
			by = fmt.Sprintf("by %d", *d.By)
		}
		out[i] = fmt.Sprintf("%s %v %v %s", r.Type, d.Users, d.Friends, by)
		after = r.ID
	}
	return out, after
}

// TestWebhookEventsNameTheActor: the member and friendship events name the user who made the
// change, and none for an operator (docs/DESIGN.md issue-32 part 2 "Member, friendship and
// report events"). Group 10 is owned by 1 with admin 2 and members 3, 4.
func TestWebhookEventsNameTheActor(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		act  func(s *directory.Service) error
		want []string
	}{
		{"a user creates a group", func(s *directory.Service) error {
			_, err := s.CreateGroup(ctx, tenant, 5, directory.NewGroup{Members: []int64{6}})
			return err
		}, []string{"member.joined [5 6] false by 5"}},
		{"an operator creates a group", func(s *directory.Service) error {
			_, err := s.CreateGroup(ctx, tenant, directory.Operator, directory.NewGroup{ID: 11, Owner: 5})
			return err
		}, []string{"member.joined [5] false no by"}},
		{"an admin adds", func(s *directory.Service) error { return s.AddMembers(ctx, tenant, 2, 10, []int64{5}) },
			[]string{"member.joined [5] false by 2"}},
		{"an operator adds", func(s *directory.Service) error { return s.AddMembers(ctx, tenant, directory.Operator, 10, []int64{5}) },
			[]string{"member.joined [5] false no by"}},
		{"a member leaves", func(s *directory.Service) error { return s.RemoveMember(ctx, tenant, 3, 10, 3) },
			[]string{"member.left [3] false by 3"}},
		{"an admin removes", func(s *directory.Service) error { return s.RemoveMember(ctx, tenant, 2, 10, 3) },
			[]string{"member.left [3] false by 2"}},
		{"an operator removes", func(s *directory.Service) error { return s.RemoveMember(ctx, tenant, directory.Operator, 10, 3) },
			[]string{"member.left [3] false no by"}},
		{"a request accepted", func(s *directory.Service) error {
			if _, err := s.RequestFriend(ctx, tenant, 1, 5, ""); err != nil {
				return err
			}
			return s.AcceptFriend(ctx, tenant, 5, 1)
		}, []string{"friendship.changed [1 5] true by 5"}},
		{"requests that meet", func(s *directory.Service) error {
			if _, err := s.RequestFriend(ctx, tenant, 6, 5, ""); err != nil {
				return err
			}
			_, err := s.RequestFriend(ctx, tenant, 5, 6, "")
			return err
		}, []string{"friendship.changed [5 6] true by 5"}},
		{"a user and an operator end friendships", func(s *directory.Service) error {
			for _, err := range []error{
				s.AddFriendship(ctx, tenant, 5, 6), s.RemoveFriend(ctx, tenant, 6, 5),
				s.AddFriendship(ctx, tenant, 5, 6), s.RemoveFriendship(ctx, tenant, 5, 6),
			} {
				if err != nil {
					return err
				}
			}
			return nil
		}, []string{
			"friendship.changed [5 6] true no by", "friendship.changed [5 6] false by 6",
			"friendship.changed [5 6] true no by", "friendship.changed [5 6] false no by",
		}},
		{"an operator deletes a user", func(s *directory.Service) error {
			if err := s.AddFriendship(ctx, tenant, 4, 5); err != nil {
				return err
			}
			return s.DeleteUser(ctx, tenant, 4)
		}, []string{"friendship.changed [4 5] true no by", "friendship.changed [4 5] false no by", "member.left [4] false no by"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			_, mark := f.hookEvents(t, 0)
			if err := tt.act(f.svc); err != nil {
				t.Fatal(err)
			}
			if got, _ := f.hookEvents(t, mark); !slices.Equal(got, tt.want) {
				t.Fatalf("webhook events %q, want %q", got, tt.want)
			}
		})
	}
}
