package nativepush

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/memory"
	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/pushtoken"
)

func TestRegistry(t *testing.T) {
	ctx := context.Background()
	tokens := memory.NewPushTokens()
	clock := memory.NewClock(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
	holders := NewHolders(HoldersConfig{}, tokens, clock, slog.New(slog.DiscardHandler))
	r := NewRegistry(tokens, clock, holders)
	steps := []struct {
		name       string
		body       string // Register when set, else Unregister of device
		device     string
		wantCode   apperr.Code
		wantLeft   int
		wantHolder bool // the holders know user 1 at once
	}{
		{name: "register", body: `{"device_id":"phone","platform":"apns","app_id":"com.example","token":"ab"}`, wantLeft: 1, wantHolder: true},
		{name: "replace", body: `{"device_id":"phone","platform":"fcm","app_id":"proj","token":"cd"}`, wantLeft: 1, wantHolder: true},
		{name: "bad body changes nothing", body: `{"device_id":"phone","platform":"sms","app_id":"x","token":"t"}`, wantCode: apperr.InvalidArgument, wantLeft: 1, wantHolder: true},
		{name: "bad device id", device: "", wantCode: apperr.InvalidArgument, wantLeft: 1, wantHolder: true},
		{name: "second device", body: `{"device_id":"tablet","platform":"fcm","app_id":"proj","token":"ef"}`, wantLeft: 2, wantHolder: true},
		{name: "unregister with a token left", device: "phone", wantLeft: 1, wantHolder: true},
		{name: "unregister the last", device: "tablet", wantLeft: 0},
		{name: "unregister again", device: "tablet", wantCode: apperr.NotFound, wantLeft: 0},
	}
	for _, st := range steps {
		var err error
		if st.body != "" {
			_, err = r.Register(ctx, "acme", 1, []byte(st.body))
		} else {
			err = r.Unregister(ctx, "acme", 1, st.device)
		}
		if apperr.CodeOf(err) != st.wantCode {
			t.Fatalf("%s: code %d (%v); want %d", st.name, apperr.CodeOf(err), err, st.wantCode)
		}
		left, _ := tokens.TokensOf(ctx, "acme", []int64{1})
		if len(left) != st.wantLeft {
			t.Fatalf("%s: %d tokens; want %d", st.name, len(left), st.wantLeft)
		}
		if len(left) == 1 && st.name == "replace" && (left[0].Token != "cd" || left[0].UpdatedAt.Year() != 2030) {
			t.Fatalf("replace: %+v", left[0])
		}
		if got := holders.Has("acme", 1); got != st.wantHolder {
			t.Fatalf("%s: holder %v; want %v", st.name, got, st.wantHolder)
		}
	}
}

func TestRegistryDeadLetters(t *testing.T) {
	ctx := context.Background()
	tokens := memory.NewPushTokens()
	r := NewRegistry(tokens, memory.NewClock(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)), nil)
	for i := range 3 {
		if err := tokens.AddDeadLetter(ctx, "acme", pushtoken.DeadLetter{Provider: pushtoken.FCM, MsgID: int64(i)}); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		provider string
		limit    int
		want     int
		code     apperr.Code
	}{
		{"fcm", 2, 2, apperr.OK}, {"fcm", 0, 1, apperr.OK}, {"apns", 10, 0, apperr.OK}, {"sms", 10, 0, apperr.InvalidArgument},
	}
	for _, tc := range tests {
		ds, err := r.DeadLetters(ctx, "acme", tc.provider, tc.limit)
		if apperr.CodeOf(err) != tc.code || len(ds) != tc.want {
			t.Fatalf("DeadLetters(%s, %d) = %d, %v; want %d, code %d", tc.provider, tc.limit, len(ds), err, tc.want, tc.code)
		}
	}
}
