package webhook_test

import (
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/imdhq/imd/clients/go/webhook"
)

// The known answers of the server's signer (core/domain/webhook TestSign).
const (
	body    = `{"type":"message.created"}`
	sigTest = "fd9a019a6df816e5e55b371478c51b9adeda75714912d2f1b7752b5193e893ae"
	sigNext = "6d2d8c504b486a688384a003702329d5c842c4b61de9f00ccd832ab059d01fa1" // t=1764590401
)

func TestVerify(t *testing.T) {
	at := time.Unix(1764590400, 0)
	cases := []struct {
		name, secret, header, body string
		now                        time.Time
		want                       error
	}{
		{"valid", "whsec_test", "t=1764590400,v1=" + sigTest, body, at, nil},
		{"valid within tolerance", "whsec_test", "t=1764590400,v1=" + sigTest, body, at.Add(5 * time.Minute), nil},
		{"clock behind the sender", "whsec_test", "t=1764590400,v1=" + sigTest, body, at.Add(-time.Minute), nil},
		{"one of two during a rotation", "whsec_test", "t=1764590400,v1=" + strings.Repeat("00", 32) + ",v1=" + sigTest, body, at, nil},
		{"spaces after commas", "whsec_test", "t=1764590400, v1=" + sigTest, body, at, nil},
		{"too old", "whsec_test", "t=1764590400,v1=" + sigTest, body, at.Add(5*time.Minute + time.Second), webhook.ErrTooOld},
		{"from the future", "whsec_test", "t=1764590400,v1=" + sigTest, body, at.Add(-6 * time.Minute), webhook.ErrTooOld},
		{"other secret", "whsec_other", "t=1764590400,v1=" + sigTest, body, at, webhook.ErrBadSignature},
		{"body changed", "whsec_test", "t=1764590400,v1=" + sigTest, body + " ", at, webhook.ErrBadSignature},
		{"timestamp moved", "whsec_test", "t=1764590401,v1=" + sigTest, body, at, webhook.ErrBadSignature},
		{"signature of the moved timestamp", "whsec_test", "t=1764590401,v1=" + sigNext, body, at, nil},
		{"no header", "whsec_test", "", body, at, webhook.ErrNoSignature},
		{"no v1", "whsec_test", "t=1764590400", body, at, webhook.ErrNoSignature},
		{"not hex", "whsec_test", "t=1764590400,v1=zz", body, at, webhook.ErrNoSignature},
		{"no timestamp", "whsec_test", "v1=" + sigTest, body, at, webhook.ErrNoSignature},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := webhook.Verify(c.secret, c.header, []byte(c.body), c.now, webhook.DefaultTolerance); !errors.Is(err, c.want) {
				t.Fatalf("Verify = %v, want %v", err, c.want)
			}
		})
	}
}

func TestReadVerified(t *testing.T) {
	at := time.Unix(1764590400, 0)
	cases := []struct {
		name, body string
		ok         bool
	}{
		{"signed body", body, true},
		{"tampered body", body + "x", false},
		{"oversized body", strings.Repeat("x", webhook.MaxBody+1), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/hook", strings.NewReader(c.body))
			r.Header.Set(webhook.SignatureHeader, "t=1764590400,v1="+sigTest)
			got, err := webhook.ReadVerified(r, "whsec_test", at)
			if (err == nil) != c.ok || (c.ok && string(got) != c.body) {
				t.Fatalf("ReadVerified = %.40q, %v; want ok=%v", got, err, c.ok)
			}
		})
	}
}
