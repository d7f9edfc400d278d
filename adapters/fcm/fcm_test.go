package fcm

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"testing"

	"github.com/imdhq/imd/adapters/fcm/fcmtest"
	"github.com/imdhq/imd/core/domain/pushtoken"
)

func newClient(t *testing.T, s *fcmtest.Server, credentials []byte) *Client {
	t.Helper()
	roots := x509.NewCertPool()
	roots.AddCert(s.Certificate())
	c, err := New(Config{CredentialsJSON: credentials, Endpoint: s.URL, TLS: &tls.Config{RootCAs: roots}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func alert(token string) pushtoken.Alert {
	return pushtoken.Alert{Token: pushtoken.Token{Platform: pushtoken.FCM, AppID: fcmtest.Project, Token: token},
		Title: "New message", Body: "hi", Badge: 5, CollapseID: pushtoken.CollapseID(42), Conversation: 42, MsgID: 7}
}

func TestSend(t *testing.T) {
	s, err := fcmtest.New()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.Unregister("gone")
	s.FailNext("busy", 429, 503)
	c := newClient(t, s, s.ServiceAccountJSON())
	tests := []struct {
		name  string
		token string
		want  error
	}{
		{"sent", "tok-1", nil},
		{"unregistered", "gone", pushtoken.ErrInvalidToken},
		{"429 retryable", "busy", pushtoken.ErrRetryable},
		{"503 retryable", "busy", pushtoken.ErrRetryable},
		{"sent after", "busy", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := c.Send(context.Background(), alert(tc.token)); (tc.want == nil && err != nil) || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Fatalf("err = %v; want %v", err, tc.want)
			}
		})
	}
	got := s.Accepted()
	if len(got) != 2 || got[0].Badge != 5 || got[0].CollapseKey != "c42" || got[0].Body != "hi" || got[0].Data["msg_id"] != "7" {
		t.Fatalf("accepted %+v; want two, badge 5, collapse c42", got)
	}
	if s.Grants() != 1 {
		t.Fatalf("%d access tokens issued; want 1, reused", s.Grants())
	}
}

// A service account whose key is not the one the token endpoint knows gets no access token,
// so no message is sent (the fake verifies the grant's RS256 signature).
func TestForeignKeyRefused(t *testing.T) {
	s, err := fcmtest.New()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var sa map[string]string
	if err := json.Unmarshal(s.ServiceAccountJSON(), &sa); err != nil {
		t.Fatal(err)
	}
	other, _ := rsa.GenerateKey(rand.Reader, 2048)
	der, _ := x509.MarshalPKCS8PrivateKey(other)
	sa["private_key"] = string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	raw, _ := json.Marshal(sa)
	err = newClient(t, s, raw).Send(context.Background(), alert("tok-1"))
	if err == nil || len(s.Accepted()) != 0 || s.Grants() != 0 {
		t.Fatalf("err = %v, accepted %d, grants %d; want a refusal", err, len(s.Accepted()), s.Grants())
	}
}
