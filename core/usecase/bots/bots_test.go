package bots_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/memory"
	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/auth"
	"github.com/imdhq/imd/core/domain/social"
	"github.com/imdhq/imd/core/domain/webhook"
	"github.com/imdhq/imd/core/usecase/bots"
)

const tenant = "acme"

// tokens issues readable tokens, so a test sees whom and for how long.
type tokens struct{}

func (tokens) Issue(id auth.Identity, ttl time.Duration) (string, error) {
	return fmt.Sprintf("%s/%d/%s", id.Tenant, id.UserID, ttl), nil
}

func TestCreateBots(t *testing.T) {
	ctx := context.Background()
	dir := memory.NewDirectory()
	svc := bots.New(bots.Deps{Users: dir, Bots: memory.NewBots(), Tokens: tokens{}, Clock: memory.NewClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))})
	for _, u := range []int64{5, 6} {
		if err := dir.CreateUser(ctx, tenant, social.User{ID: u}); err != nil {
			t.Fatal(err)
		}
	}
	if err := dir.SetUserStatus(ctx, tenant, 6, social.UserDeleted); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name      string
		id        int64
		botName   string
		code      apperr.Code
		wantToken string
	}{
		{"new user", 90, "echo", apperr.OK, "acme/90/8760h0m0s"},
		{"again", 90, "echo", apperr.Conflict, ""},
		{"an existing user becomes one", 5, "triage", apperr.OK, "acme/5/8760h0m0s"},
		{"deleted user", 6, "ghost", apperr.Conflict, ""},
		{"no name", 91, "", apperr.InvalidArgument, ""},
		{"bad id", 0, "zero", apperr.InvalidArgument, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, tok, err := svc.Create(ctx, tenant, c.id, c.botName)
			if apperr.CodeOf(err) != c.code || tok != c.wantToken || (err == nil && b.UserID != c.id) {
				t.Fatalf("Create = %+v, %q, %v; want code %v, token %q", b, tok, err, c.code, c.wantToken)
			}
		})
	}
	if ok, _ := dir.UserExists(ctx, tenant, 90); !ok {
		t.Fatal("the bot's user was not made")
	}
	if list, err := svc.List(ctx, tenant); err != nil || len(list) != 2 || list[0].UserID != 5 || list[1].Name != "echo" {
		t.Fatalf("List = %+v, %v", list, err)
	}
	if tok, err := svc.Token(ctx, tenant, 90); err != nil || tok != "acme/90/8760h0m0s" {
		t.Fatalf("Token = %q, %v", tok, err)
	}
	if _, err := svc.Token(ctx, tenant, 6); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("Token of a user that is no bot = %v, want not found", err)
	}
}

// revoker records whose tokens were revoked and fails while broken.
type revoker struct {
	revoked []int64
	broken  bool
}

func (r *revoker) RevokeUser(_ context.Context, _ string, user int64) (time.Time, error) {
	if r.broken {
		return time.Time{}, apperr.New(apperr.Busy, "revocation unavailable, retry")
	}
	r.revoked = append(r.revoked, user)
	return time.Time{}, nil
}

// sessions records whose connections were closed.
type sessions struct{ ended []int64 }

func (s *sessions) EndUser(_ context.Context, _ string, user int64, _ string) error {
	s.ended = append(s.ended, user)
	return nil
}

func TestDeleteBots(t *testing.T) {
	ctx := context.Background()
	dir, rev, sess, eps := memory.NewDirectory(), &revoker{}, &sessions{}, memory.NewWebhookEndpoints()
	svc := bots.New(bots.Deps{Users: dir, Bots: memory.NewBots(), Tokens: tokens{}, Revoker: rev, Sessions: sess, Endpoints: eps,
		Clock: memory.NewClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))})
	for _, id := range []int64{90, 91} {
		if _, _, err := svc.Create(ctx, tenant, id, "bot"); err != nil {
			t.Fatal(err)
		}
	}
	if err := eps.CreateEndpoint(ctx, tenant, webhook.Endpoint{ID: 1, URL: "https://hooks.example/in", Events: []webhook.EventType{webhook.MessageCreated}, BotID: 91}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		id     int64
		broken bool
		code   apperr.Code
	}{
		{"no such bot", 5, false, apperr.NotFound},
		{"an endpoint bound to it", 91, false, apperr.Conflict},
		{"revocation down", 90, true, apperr.Busy},
		{"deleted", 90, false, apperr.OK},
		{"again", 90, false, apperr.NotFound},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rev.broken = c.broken
			if err := svc.Delete(ctx, tenant, c.id); apperr.CodeOf(err) != c.code {
				t.Fatalf("Delete(%d) = %v, want code %v", c.id, err, c.code)
			}
		})
	}
	if !slices.Equal(rev.revoked, []int64{90}) || !slices.Equal(sess.ended, []int64{90}) {
		t.Fatalf("revoked %v and closed %v, want bot 90's only", rev.revoked, sess.ended)
	}
	if list, err := svc.List(ctx, tenant); err != nil || len(list) != 1 || list[0].UserID != 91 {
		t.Fatalf("List after delete = %+v, %v; want bot 91 alone", list, err)
	}
	if ok, _ := dir.UserExists(ctx, tenant, 90); !ok {
		t.Fatal("the deleted bot's user is gone; it stays as the author of what it sent")
	}
}
