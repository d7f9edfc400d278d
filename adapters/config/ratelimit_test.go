package config

import (
	"strings"
	"testing"
)

func TestHTTPRateLimits(t *testing.T) {
	tests := []struct {
		name           string
		env            []string
		user, perIP    int
		wantErrContain string
	}{
		{"defaults", nil, 20, 200, ""},
		{"overridden", []string{"IMD_RATE_LIMIT_HTTP_PER_SECOND=5", "IMD_RATE_LIMIT_PER_IP_HTTP_PER_SECOND=50"}, 5, 50, ""},
		{"unlimited", []string{"IMD_RATE_LIMIT_HTTP_PER_SECOND=0", "IMD_RATE_LIMIT_PER_IP_HTTP_PER_SECOND=0"}, 0, 0, ""},
		{"negative per user", []string{"IMD_RATE_LIMIT_HTTP_PER_SECOND=-1"}, 0, 0, "rate_limit"},
		{"negative per IP", []string{"IMD_RATE_LIMIT_PER_IP_HTTP_PER_SECOND=-1"}, 0, 0, "rate_limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Load(writeConfig(t, validYAML), tt.env)
			if tt.wantErrContain != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErrContain) {
					t.Fatalf("err = %v, want one naming %s", err, tt.wantErrContain)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.RateLimit; got.HTTPPerSecond != tt.user || got.PerIP.HTTPPerSecond != tt.perIP {
				t.Fatalf("http_per_second = %d, per_ip %d; want %d, %d", got.HTTPPerSecond, got.PerIP.HTTPPerSecond, tt.user, tt.perIP)
			}
		})
	}
}
