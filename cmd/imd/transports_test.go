package main

import (
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/config"
	"github.com/imdhq/imd/adapters/protocol/ratelimit"
)

// The rate_limit section reaches the frame and HTTP budgets field by field, with its unit.
func TestRateLimitBudgets(t *testing.T) {
	r := config.Default().RateLimit
	r.MessagePerSecond, r.AuthPerSecond, r.SyncInboxPerMinute, r.SyncMessagesPerMinute, r.HistoryPerMinute = 1, 2, 3, 4, 5
	r.PerIP.MessagePerSecond, r.PerIP.AuthPerSecond, r.PerIP.SyncInboxPerMinute = 6, 7, 8
	r.PerIP.SyncMessagesPerMinute, r.PerIP.HistoryPerMinute = 9, 10
	r.HTTPPerSecond, r.PerIP.HTTPPerSecond = 11, 12
	frames, client := frameBudgets(r), clientBudgets(r)
	tests := []struct {
		name string
		got  ratelimit.Rate
		want ratelimit.Rate
	}{
		{"device send", frames.Device.Send, ratelimit.Rate{Count: 1, Per: time.Second}},
		{"device auth", frames.Device.Auth, ratelimit.Rate{Count: 2, Per: time.Second}},
		{"device sync inbox", frames.Device.SyncInbox, ratelimit.Rate{Count: 3, Per: time.Minute}},
		{"device sync messages", frames.Device.SyncMessages, ratelimit.Rate{Count: 4, Per: time.Minute}},
		{"device history", frames.Device.History, ratelimit.Rate{Count: 5, Per: time.Minute}},
		{"IP send", frames.IP.Send, ratelimit.Rate{Count: 6, Per: time.Second}},
		{"IP auth", frames.IP.Auth, ratelimit.Rate{Count: 7, Per: time.Second}},
		{"IP sync inbox", frames.IP.SyncInbox, ratelimit.Rate{Count: 8, Per: time.Minute}},
		{"IP sync messages", frames.IP.SyncMessages, ratelimit.Rate{Count: 9, Per: time.Minute}},
		{"IP history", frames.IP.History, ratelimit.Rate{Count: 10, Per: time.Minute}},
		{"HTTP user", client.User, ratelimit.Rate{Count: 11, Per: time.Second}},
		{"HTTP IP", client.IP, ratelimit.Rate{Count: 12, Per: time.Second}},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: %+v, want %+v", tt.name, tt.got, tt.want)
		}
	}
}
