package bots_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/memory"
	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/auth"
	"github.com/imdhq/imd/core/domain/social"
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
