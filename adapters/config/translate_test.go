package config

import (
	"bytes"
	"testing"

	"github.com/imdhq/imd/core/loop/retention"
)

// The translations cmd/imd hands to the adapters and the core, each checked on one value.
func TestTranslations(t *testing.T) {
	c := Default()
	c.TokenSecret, c.HTTP.Addr = "token", "127.0.0.1:8080"
	c.Archive.Retention = Retention{KeepOnlineMonths: 3, PurgeAfterMonths: 12}
	c.Archive.TenantRetention = map[string]Retention{"acme": {KeepOnlineMonths: 1}}

	if p := c.Archive.Retention.Policy(); p != (retention.Policy{KeepOnlineMonths: 3, PurgeAfterMonths: 12}) {
		t.Errorf("policy %+v", p)
	}
	if p := c.Archive.TenantPolicies(); len(p) != 1 || p["acme"].KeepOnlineMonths != 1 {
		t.Errorf("tenant policies %+v", p)
	}
	for rows, want := range map[int]int{0: -1, 500: 500} {
		if got := (Migration{RowsPerSecond: rows}).RateCap(); got != want {
			t.Errorf("RateCap of %d rows/s = %d, want %d", rows, got, want)
		}
	}

	derived := c.URLSecret()
	if len(derived) != 32 || bytes.Equal(derived, []byte("token")) {
		t.Errorf("derived URL secret %x: want an HMAC of the token secret", derived)
	}
	if got := c.UploadsBaseURL(); got != "http://127.0.0.1:8080" {
		t.Errorf("default base URL %q", got)
	}
	c.Uploads.Secret, c.Uploads.BaseURL = "own", "https://files.example"
	if got := string(c.URLSecret()); got != "own" || c.UploadsBaseURL() != "https://files.example" {
		t.Errorf("configured secret %q, base URL %q", got, c.UploadsBaseURL())
	}
}
