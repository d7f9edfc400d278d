package http

import (
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/imdhq/imd/adapters/protocol/ratelimit"
	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/auth"
)

// ClientRateLimits bound the client API (/api/v1) as the frame listener's budgets bound
// frames. The IP budget is checked before the token, so a flood of bad tokens costs neither a
// signature check nor a revocation lookup; the user budget after it, so one user cannot dodge
// it by changing addresses. Each allows its whole budget as a burst; a zero Rate is unlimited.
// Over budget the answer is 429 with code 42901 and nothing else happens.
type ClientRateLimits struct {
	// User is the budget of one user (tenant and user id), whichever token or address it uses.
	User ratelimit.Rate
	// IP is the budget of one real client address (X-Real-IP from the local Nginx), IPv6 per
	// /64, shared by every user behind it.
	IP ratelimit.Rate
	// Keys bounds the users and the addresses tracked at once, each. Default 65536.
	Keys int
}

// Sweeping bounds of the budget tables.
const (
	defaultLimitKeys = 1 << 16
	limitSweepEvery  = 10 * time.Second
)

// userBudgetKey is one user's bucket.
type userBudgetKey struct {
	tenant string
	user   int64
}

// clientLimiter decides the client API budgets in memory, without I/O.
type clientLimiter struct {
	user, ip ratelimit.Limit
	users    *ratelimit.Shared[userBudgetKey]
	ips      *ratelimit.Shared[netip.Addr]
	// epoch is the fixed instant the buckets' monotonic readings are taken from.
	epoch     time.Time
	now       func() time.Time
	lastSweep atomic.Int64 // reading (ns since epoch) of the last sweep
}

func newClientLimiter(r ClientRateLimits) *clientLimiter {
	keys := r.Keys
	if keys <= 0 {
		keys = defaultLimitKeys
	}
	return &clientLimiter{
		user: ratelimit.NewLimit(r.User), ip: ratelimit.NewLimit(r.IP),
		users: ratelimit.NewShared[userBudgetKey](keys), ips: ratelimit.NewShared[netip.Addr](keys),
		epoch: time.Now(), now: time.Now,
	}
}

// since is now as a reading for the buckets, never below zero.
func (l *clientLimiter) since() time.Duration {
	t := max(l.now().Sub(l.epoch), 0)
	if last := time.Duration(l.lastSweep.Load()); t-last >= limitSweepEvery && l.lastSweep.CompareAndSwap(int64(last), int64(t)) {
		// Forget refilled buckets, so the tables hold only recently active keys.
		l.users.Sweep(t)
		l.ips.Sweep(t)
	}
	return t
}

// allowAddr spends one request of the client address's budget; an unknown address has none.
func (l *clientLimiter) allowAddr(addr netip.Addr) bool {
	return !addr.IsValid() || l.ips.Allow(addr, l.ip, l.since())
}

// allowUser spends one request of the user's budget. Refused, it gives the address back the
// request allowAddr spent: the request never happened.
func (l *clientLimiter) allowUser(who auth.Identity, addr netip.Addr) bool {
	if l.users.Allow(userBudgetKey{tenant: who.Tenant, user: who.UserID}, l.user, l.since()) {
		return true
	}
	if addr.IsValid() {
		l.ips.Refund(addr, l.ip)
	}
	return false
}

// clientAddr is the key of the request's real client address (see Server.New for which
// X-Real-IP is believed); invalid when it cannot be parsed.
func clientAddr(c echo.Context) netip.Addr {
	ip, err := netip.ParseAddr(c.RealIP())
	if err != nil {
		return netip.Addr{}
	}
	return ratelimit.AddrKey(ip)
}

// rateLimited is the answer over budget; Retry-After tells well-behaved clients when to come
// back (a budget refills one request per Per/Count, well within a second for the defaults).
func rateLimited(c echo.Context) error {
	c.Response().Header().Set("Retry-After", "1")
	return apperr.New(apperr.RateLimited, "too many requests, retry later")
}
