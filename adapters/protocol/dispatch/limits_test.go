package dispatch

import (
	"net/netip"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/protocol/ratelimit"
	"github.com/imdhq/imd/clients/go/wire"
)

func perMinute(n int) ratelimit.Rate { return ratelimit.Rate{Count: n, Per: time.Minute} }

func TestLimiterAllow(t *testing.T) {
	now := time.Now()
	tests := []struct {
		name      string
		limits    RateLimits
		ip        string
		requests  int
		want      string // the scope refusing the last request
		wantSpent int    // requests spent from the connection's own budget
	}{
		{"within both", RateLimits{Device: Budgets{Send: perMinute(5)}, IP: Budgets{Send: perMinute(5)}}, "192.0.2.1", 5, "", 5},
		{"device refuses", RateLimits{Device: Budgets{Send: perMinute(2)}}, "192.0.2.1", 3, "device", 2},
		{"IP refuses and the device budget is given back", RateLimits{Device: Budgets{Send: perMinute(5)}, IP: Budgets{Send: perMinute(2)}}, "192.0.2.1", 3, "ip", 2},
		{"unknown address has no IP budget", RateLimits{IP: Budgets{Send: perMinute(1)}}, "", 3, "", 0},
		{"unlimited", RateLimits{}, "192.0.2.1", 100, "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newLimiter(tt.limits.withKeys())
			c := &Client{}
			if tt.ip != "" {
				c.SetRealIP(netip.MustParseAddr(tt.ip))
			}
			var got string
			for range tt.requests {
				got = l.allow(c, budgetSend, now)
			}
			if got != tt.want {
				t.Fatalf("last request refused by %q, want %q", got, tt.want)
			}
			// What is left of the device budget shows what was spent.
			lim := tt.limits.Device.Send.Count
			if lim == 0 {
				return
			}
			b, left := c.budgets[budgetSend], 0
			for left < lim && b.Allow(l.device[budgetSend], l.since(now)) {
				left++
			}
			if lim-left != tt.wantSpent {
				t.Fatalf("device budget spent %d, want %d", lim-left, tt.wantSpent)
			}
		})
	}
}

func (r RateLimits) withKeys() RateLimits {
	r.IPKeys = 1024
	return r
}

func TestLimitKey(t *testing.T) {
	tests := []struct{ ip, want string }{
		{"203.0.113.7", "203.0.113.7"},
		{"::ffff:203.0.113.7", "203.0.113.7"},
		{"2001:db8:1:2:aaaa:bbbb:cccc:dddd", "2001:db8:1:2::"},
		{"2001:db8:1:2::1", "2001:db8:1:2::"},
	}
	for _, tt := range tests {
		if got := limitKey(netip.MustParseAddr(tt.ip)); got.String() != tt.want {
			t.Errorf("limitKey(%s) = %s, want %s", tt.ip, got, tt.want)
		}
	}
	if limitKey(netip.Addr{}).IsValid() {
		t.Error("an unknown address got a key")
	}
}

// TestBudgetOf: every read of a conversation's stored lists spends from the history budget,
// every command that writes a message from the send budget (issue 31).
func TestBudgetOf(t *testing.T) {
	for _, tt := range []struct {
		cmd  uint16
		want budget
	}{
		{wire.CmdGetHistory, budgetHistory},
		{wire.CmdReadState, budgetHistory},
		{wire.CmdGetReactions, budgetHistory},
		{wire.CmdGetPins, budgetHistory},
		{wire.CmdSendMessage, budgetSend},
		{wire.CmdAddReaction, budgetSend},
		{wire.CmdPinMessage, budgetSend},
	} {
		if got := budgetOf(tt.cmd); got != tt.want {
			t.Errorf("budgetOf(%d) = %s, want %s", tt.cmd, got, tt.want)
		}
	}
}
