package contract

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/imdhq/imd/core/domain/pushtoken"
	"github.com/imdhq/imd/ports"
)

// PushTokensFactory returns a push token table and an empty tenant.
type PushTokensFactory func(t *testing.T) (s ports.PushTokens, tenant string)

// PushTokens runs the push token contract: one token per user and device, replaced by a new
// registration; the users holding tokens, all or updated since a time; removal by device and
// by token value; dead letters newest first per provider.
func PushTokens(t *testing.T, newStore PushTokensFactory) {
	s, tenant := newStore(t)
	ctx := context.Background()
	at := time.Date(2030, 3, 4, 5, 6, 7, 8_000_000, time.UTC)
	a := pushtoken.Token{User: 1, DeviceID: "phone", Platform: pushtoken.APNs, AppID: "com.example.chat", Token: "aa11", Locale: "de-DE", UpdatedAt: at}
	b := pushtoken.Token{User: 1, DeviceID: "tablet", Platform: pushtoken.FCM, AppID: "proj", Token: "shared", UpdatedAt: at}
	c := pushtoken.Token{User: 2, DeviceID: "phone", Platform: pushtoken.FCM, AppID: "proj", Token: "shared", UpdatedAt: at}
	for _, tok := range []pushtoken.Token{c, b, a} {
		if err := s.PutToken(ctx, tenant, tok); err != nil {
			t.Fatalf("PutToken %+v: %v", tok, err)
		}
	}
	a.Token, a.UpdatedAt = "aa22", at.Add(time.Minute)
	if err := s.PutToken(ctx, tenant, a); err != nil {
		t.Fatalf("PutToken again: %v", err)
	}
	got, err := s.TokensOf(ctx, tenant, []int64{1, 2, 3})
	if err != nil || !reflect.DeepEqual(got, []pushtoken.Token{a, b, c}) {
		t.Fatalf("TokensOf = %+v, %v; want [a b c] with a replaced", got, err)
	}
	if got, err := s.TokensOf(ctx, tenant, nil); err != nil || len(got) != 0 {
		t.Fatalf("TokensOf(nil) = %+v, %v", got, err)
	}
	for _, c := range []struct {
		since time.Time
		want  []int64
	}{
		{time.Time{}, []int64{1, 2}},      // every holder, user 1 once for two devices
		{at, []int64{1, 2}},               // at the since time counts
		{at.Add(time.Second), []int64{1}}, // only the replaced token is newer
		{at.Add(2 * time.Minute), nil},    // nothing newer
	} {
		if got, err := s.UsersWithTokens(ctx, tenant, c.since); err != nil || !reflect.DeepEqual(got, c.want) && len(got)+len(c.want) > 0 {
			t.Fatalf("UsersWithTokens(%v) = %v, %v; want %v", c.since, got, err, c.want)
		}
	}
	if err := s.DeleteTokenValue(ctx, tenant, pushtoken.FCM, "shared"); err != nil {
		t.Fatalf("DeleteTokenValue: %v", err)
	}
	if got, _ := s.TokensOf(ctx, tenant, []int64{1, 2}); !reflect.DeepEqual(got, []pushtoken.Token{a}) {
		t.Fatalf("after DeleteTokenValue = %+v; want [a]", got)
	}
	for _, want := range []bool{true, false} {
		if removed, err := s.DeleteToken(ctx, tenant, 1, "phone"); err != nil || removed != want {
			t.Fatalf("DeleteToken = %v, %v; want %v", removed, err, want)
		}
	}

	for i, p := range []pushtoken.Platform{pushtoken.APNs, pushtoken.FCM, pushtoken.APNs} {
		d := pushtoken.DeadLetter{Provider: p, User: 1, DeviceID: "phone", MsgID: int64(100 + i), Attempts: 4, LastError: "HTTP 503", CreatedAt: at}
		if err := s.AddDeadLetter(ctx, tenant, d); err != nil {
			t.Fatalf("AddDeadLetter: %v", err)
		}
	}
	dl, err := s.DeadLetters(ctx, tenant, pushtoken.APNs, 10)
	if err != nil || len(dl) != 2 || dl[0].MsgID != 102 || dl[1].MsgID != 100 || dl[0].Attempts != 4 || dl[0].LastError != "HTTP 503" || !dl[0].CreatedAt.Equal(at) {
		t.Fatalf("DeadLetters(apns) = %+v, %v; want msgs 102, 100", dl, err)
	}
	if dl, _ := s.DeadLetters(ctx, tenant, pushtoken.APNs, 1); len(dl) != 1 || dl[0].MsgID != 102 {
		t.Fatalf("DeadLetters(apns, 1) = %+v", dl)
	}
}
