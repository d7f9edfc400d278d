package apns

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/imdhq/imd/adapters/apns/apnstest"
	"github.com/imdhq/imd/core/domain/pushtoken"
)

const (
	okToken   = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	goneToken = "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"
)

func newClient(t testing.TB, s *apnstest.Server) *Client {
	t.Helper()
	roots := x509.NewCertPool()
	roots.AddCert(s.Certificate())
	c, err := New(Config{KeyPEM: s.KeyPEM(), KeyID: apnstest.KeyID, TeamID: apnstest.TeamID, Host: s.URL, TLS: &tls.Config{RootCAs: roots}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func alert(token, topic string) pushtoken.Alert {
	return pushtoken.Alert{Token: pushtoken.Token{Platform: pushtoken.APNs, AppID: topic, Token: token},
		Title: "New message", Body: "hi", Badge: 3, CollapseID: pushtoken.CollapseID(42), Conversation: 42, MsgID: 7}
}

func TestSend(t *testing.T) {
	s, err := apnstest.New()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.Unregister(goneToken)
	s.FailNext(okToken, 503)
	c := newClient(t, s)
	tests := []struct {
		name  string
		a     pushtoken.Alert
		want  error // nil, ErrInvalidToken or ErrRetryable
		final bool
	}{
		{name: "503 retryable", a: alert(okToken, apnstest.Topic), want: pushtoken.ErrRetryable},
		{name: "sent", a: alert(okToken, apnstest.Topic)},
		{name: "410 unregistered", a: alert(goneToken, apnstest.Topic), want: pushtoken.ErrInvalidToken},
		{name: "bad device token", a: alert("nothex", apnstest.Topic), want: pushtoken.ErrInvalidToken},
		{name: "bad topic is final", a: alert(okToken, "com.other"), final: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := c.Send(context.Background(), tc.a)
			switch {
			case tc.final:
				if err == nil || errors.Is(err, pushtoken.ErrRetryable) || errors.Is(err, pushtoken.ErrInvalidToken) {
					t.Fatalf("err = %v; want a final error", err)
				}
			case tc.want == nil && err != nil, tc.want != nil && !errors.Is(err, tc.want):
				t.Fatalf("err = %v; want %v", err, tc.want)
			}
		})
	}
	got := s.Accepted()
	if len(got) != 1 {
		t.Fatalf("accepted %d; want 1", len(got))
	}
	aps, _ := got[0].Payload["aps"].(map[string]any)
	if got[0].CollapseID != "c42" || aps["badge"] != float64(3) || got[0].Payload["msg_id"] != "7" {
		t.Fatalf("accepted %+v; want collapse c42, badge 3, msg_id 7", got[0])
	}
}

// The fake refuses what APNs refuses: a provider token not signed by the team's key, one
// issued over an hour ago, an oversized payload, a long collapse id, a missing push type.
func TestFakeChecks(t *testing.T) {
	s, err := apnstest.New()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	teamKey := mustKey(t, s.KeyPEM())
	otherKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	bearer := func(key *ecdsa.PrivateKey, iat time.Time) string {
		tok := jwt.NewWithClaims(jwt.SigningMethodES256, jwt.MapClaims{"iss": apnstest.TeamID, "iat": iat.Unix()})
		tok.Header["kid"] = apnstest.KeyID
		raw, err := tok.SignedString(key)
		if err != nil {
			t.Fatal(err)
		}
		return "bearer " + raw
	}
	good := map[string]string{"apns-topic": apnstest.Topic, "apns-push-type": "alert", "authorization": bearer(teamKey, time.Now())}
	with := func(k, v string) map[string]string {
		h := map[string]string{}
		for a, b := range good {
			h[a] = b
		}
		h[k] = v
		return h
	}
	body := `{"aps":{"alert":"hi"}}`
	tests := []struct {
		name       string
		headers    map[string]string
		body       string
		wantStatus int
		wantReason string
	}{
		{"accepted", good, body, 200, ""},
		{"other key", with("authorization", bearer(otherKey, time.Now())), body, 403, "InvalidProviderToken"},
		{"old token", with("authorization", bearer(teamKey, time.Now().Add(-61*time.Minute))), body, 403, "ExpiredProviderToken"},
		{"no token", with("authorization", ""), body, 403, "MissingProviderToken"},
		{"no push type", with("apns-push-type", ""), body, 400, "InvalidPushType"},
		{"long collapse id", with("apns-collapse-id", strings.Repeat("c", 65)), body, 400, "BadCollapseId"},
		{"too large", good, `{"aps":{"alert":"` + strings.Repeat("x", 4096) + `"}}`, 413, "PayloadTooLarge"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, s.URL+"/3/device/"+okToken, strings.NewReader(tc.body))
			for k, v := range tc.headers {
				req.Header.Set(k, v)
			}
			resp, err := s.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var got struct{ Reason string }
			_ = json.NewDecoder(resp.Body).Decode(&got)
			if resp.StatusCode != tc.wantStatus || got.Reason != tc.wantReason {
				t.Fatalf("answer %d %q; want %d %q", resp.StatusCode, got.Reason, tc.wantStatus, tc.wantReason)
			}
		})
	}
}

func mustKey(t *testing.T, p8 []byte) *ecdsa.PrivateKey {
	t.Helper()
	k, err := jwt.ParseECPrivateKeyFromPEM(p8)
	if err != nil {
		t.Fatal(err)
	}
	return k
}
