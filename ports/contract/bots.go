package contract

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/bot"
	"github.com/imdhq/imd/ports"
)

// Bots runs the bot registry contract: a bot reads back whole, is listed by user id, is
// recorded once, and a user that is no bot is bot.ErrNotFound.
func Bots(t *testing.T, newStore func(t *testing.T) (ports.Bots, string)) {
	s, tenant := newStore(t)
	ctx := context.Background()
	at := time.Date(2030, 3, 4, 5, 6, 7, 8_000_000, time.UTC)
	a, b := bot.Bot{UserID: 90, Name: "echo", CreatedAt: at}, bot.Bot{UserID: 12, Name: "triage", CreatedAt: at}
	for _, x := range []bot.Bot{a, b} {
		if err := s.CreateBot(ctx, tenant, x); err != nil {
			t.Fatalf("CreateBot %d: %v", x.UserID, err)
		}
	}
	if err := s.CreateBot(ctx, tenant, bot.Bot{UserID: 90, Name: "again", CreatedAt: at}); apperr.CodeOf(err) != apperr.Conflict {
		t.Fatalf("CreateBot of a recorded bot = %v, want a conflict", err)
	}
	if got, err := s.Bot(ctx, tenant, 90); err != nil || !reflect.DeepEqual(got, a) {
		t.Fatalf("Bot(90) = %+v, %v; want %+v", got, err, a)
	}
	if _, err := s.Bot(ctx, tenant, 91); !errors.Is(err, bot.ErrNotFound) {
		t.Fatalf("Bot(91) = %v, want bot.ErrNotFound", err)
	}
	if list, err := s.Bots(ctx, tenant); err != nil || !reflect.DeepEqual(list, []bot.Bot{b, a}) {
		t.Fatalf("Bots = %+v, %v; want [b a] by id", list, err)
	}
	if err := s.DeleteBot(ctx, tenant, 90); err != nil {
		t.Fatalf("DeleteBot(90): %v", err)
	}
	if err := s.DeleteBot(ctx, tenant, 90); !errors.Is(err, bot.ErrNotFound) {
		t.Fatalf("DeleteBot of a deleted bot = %v, want bot.ErrNotFound", err)
	}
	if list, err := s.Bots(ctx, tenant); err != nil || !reflect.DeepEqual(list, []bot.Bot{b}) {
		t.Fatalf("Bots after a delete = %+v, %v; want [b]", list, err)
	}
}
