package webhook_test

import (
	"testing"
	"time"

	"github.com/imdhq/imd/core/domain/webhook"
)

// TestSign holds Sign to known answers, computed independently (`printf '%s' "$t.$body" |
// openssl dgst -sha256 -hmac "$secret"`); clients/go/webhook's tests verify the same vectors,
// so signer and verifier cannot drift apart.
func TestSign(t *testing.T) {
	cases := []struct {
		name, secret string
		at           int64
		body         string
		want         string
	}{
		{"message", "whsec_test", 1764590400, `{"type":"message.created"}`,
			"t=1764590400,v1=fd9a019a6df816e5e55b371478c51b9adeda75714912d2f1b7752b5193e893ae"},
		{"empty body", "whsec_test", 1764590400, "",
			"t=1764590400,v1=1644dffbb26481033a5279e96ecda749772e37d55b044bbd822c58ce9402ae98"},
		{"other secret", "whsec_other", 1764590400, `{"type":"message.created"}`,
			"t=1764590400,v1=c24809359bd58fd8e9a7478f4542a9e6583b9b720c4ed314cda5a9baf3f93f6f"},
		{"other time", "whsec_test", 1764590401, `{"type":"message.created"}`,
			"t=1764590401,v1=6d2d8c504b486a688384a003702329d5c842c4b61de9f00ccd832ab059d01fa1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := webhook.Sign(c.secret, time.Unix(c.at, 999_000_000), []byte(c.body)); got != c.want {
				t.Fatalf("Sign = %s, want %s", got, c.want)
			}
		})
	}
}
