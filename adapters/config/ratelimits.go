package config

import (
	"time"

	"github.com/imdhq/imd/adapters/protocol/dispatch"
	"github.com/imdhq/imd/adapters/protocol/ratelimit"
)

// Frames is the rate_limit section as the frame commands' budgets (TCP and WebSocket share
// the dispatcher that enforces them).
func (r RateLimit) Frames() dispatch.RateLimits {
	budgets := func(msgPerSec, authPerSec, inboxPerMin, syncPerMin, historyPerMin int) dispatch.Budgets {
		return dispatch.Budgets{
			Send:         ratelimit.Rate{Count: msgPerSec, Per: time.Second},
			Auth:         ratelimit.Rate{Count: authPerSec, Per: time.Second},
			SyncInbox:    ratelimit.Rate{Count: inboxPerMin, Per: time.Minute},
			SyncMessages: ratelimit.Rate{Count: syncPerMin, Per: time.Minute},
			History:      ratelimit.Rate{Count: historyPerMin, Per: time.Minute},
		}
	}
	ip := r.PerIP
	return dispatch.RateLimits{
		Device: budgets(r.MessagePerSecond, r.AuthPerSecond, r.SyncInboxPerMinute, r.SyncMessagesPerMinute, r.HistoryPerMinute),
		IP:     budgets(ip.MessagePerSecond, ip.AuthPerSecond, ip.SyncInboxPerMinute, ip.SyncMessagesPerMinute, ip.HistoryPerMinute),
	}
}

// HTTP is the client API's budgets: per user and per client IP.
func (r RateLimit) HTTP() (user, ip ratelimit.Rate) {
	return ratelimit.Rate{Count: r.HTTPPerSecond, Per: time.Second}, ratelimit.Rate{Count: r.PerIP.HTTPPerSecond, Per: time.Second}
}
