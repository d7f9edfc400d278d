package dispatch

import (
	"net/netip"
	"time"

	"github.com/imdhq/imd/adapters/protocol/ratelimit"
	"github.com/imdhq/imd/clients/go/wire"
)

// budget is one request budget of seed 003 §13/§19; every limited command spends from one.
type budget uint8

const (
	budgetNone budget = iota // HEARTBEAT, PUSH_ACK, READ…: not limited
	budgetAuth
	budgetSend
	budgetSyncInbox
	budgetSyncMessages
	budgetHistory
	budgetCount
)

// String is the budget's label in tcp_rate_limited_total, after its config key.
func (b budget) String() string {
	switch b {
	case budgetAuth:
		return "auth"
	case budgetSend:
		return "message"
	case budgetSyncInbox:
		return "sync_inbox"
	case budgetSyncMessages:
		return "sync_messages"
	case budgetHistory:
		return "history"
	}
	return "none"
}

func budgetOf(cmd uint16) budget {
	switch cmd {
	case wire.CmdAuth:
		return budgetAuth
	case wire.CmdSendMessage, wire.CmdForwardMessage, wire.CmdAddReaction, wire.CmdRemoveReaction, wire.CmdPinMessage, wire.CmdUnpinMessage:
		// A forward is a send; each reaction or pin change writes a message too (issue 31).
		return budgetSend
	case wire.CmdSyncInbox:
		return budgetSyncInbox
	case wire.CmdSyncMessages:
		return budgetSyncMessages
	case wire.CmdGetHistory, wire.CmdReadState, wire.CmdGetReactions, wire.CmdGetPins:
		// READ_STATE reads a message and counts the watermarks of its conversation;
		// GET_REACTIONS and GET_PINS read a message's or a conversation's list (issue 31).
		return budgetHistory
	}
	return budgetNone
}

// Budgets are the request rates of one scope; a zero Rate is unlimited.
type Budgets struct {
	Auth, Send, SyncInbox, SyncMessages, History ratelimit.Rate
}

func (b Budgets) limits() [budgetCount]ratelimit.Limit {
	var l [budgetCount]ratelimit.Limit
	l[budgetAuth] = ratelimit.NewLimit(b.Auth)
	l[budgetSend] = ratelimit.NewLimit(b.Send)
	l[budgetSyncInbox] = ratelimit.NewLimit(b.SyncInbox)
	l[budgetSyncMessages] = ratelimit.NewLimit(b.SyncMessages)
	l[budgetHistory] = ratelimit.NewLimit(b.History)
	return l
}

// RateLimits bound requests from the first one on (seed 003 §13: never "after sequence_id
// 200"); over budget, a request is answered 42901 and nothing else happens. Both scopes are
// decided on the event loop in memory, without I/O.
type RateLimits struct {
	// Device budgets belong to a connection: a device has one at a time, and before AUTH the
	// connection is all there is to hold to account.
	Device Budgets
	// IP budgets are shared by every connection of one real client address (from PROXY),
	// IPv6 per /64 since one host usually owns a whole /64.
	IP Budgets
	// IPKeys bounds the addresses tracked at once. Default 65536.
	IPKeys int
}

// ipBudgetKey is one address's bucket for one budget.
type ipBudgetKey struct {
	addr   netip.Addr
	budget budget
}

// limitKey is the address a client's IP budgets are kept under; invalid (no IP budgets) when
// the client's address is unknown, as on a unix socket without PROXY.
func limitKey(ip netip.Addr) netip.Addr {
	if ip.Is6() && !ip.Is4In6() {
		return netip.PrefixFrom(ip, 64).Masked().Addr()
	}
	return ip.Unmap()
}

// limiter holds the prepared limits and the shared IP buckets.
type limiter struct {
	device [budgetCount]ratelimit.Limit
	ip     [budgetCount]ratelimit.Limit
	ips    *ratelimit.Shared[ipBudgetKey]
	// epoch is the fixed instant monotonic readings are taken from.
	epoch time.Time
}

func newLimiter(r RateLimits) *limiter {
	return &limiter{
		device: r.Device.limits(),
		ip:     r.IP.limits(),
		ips:    ratelimit.NewShared[ipBudgetKey](r.IPKeys),
		epoch:  time.Now(),
	}
}

// allow spends one request of b from the connection's budget and its address's. It returns
// the scope that refused ("device" or "ip"), or "" when the request may go on. Event loop of
// the connection only: its buckets are not locked.
func (l *limiter) allow(c *Client, b budget, now time.Time) (refusedBy string) {
	if b == budgetNone {
		return ""
	}
	t := l.since(now)
	if !c.budgets[b].Allow(l.device[b], t) {
		return "device"
	}
	if !c.limitKey.IsValid() {
		return ""
	}
	if !l.ips.Allow(ipBudgetKey{c.limitKey, b}, l.ip[b], t) {
		c.budgets[b].Refund(l.device[b]) // the request never happened
		return "ip"
	}
	return ""
}

// since is now as a monotonic reading for the buckets. Readings never go below zero, where a
// new (zero) bucket would look spent: a request time taken before the limiter was built
// counts as its start.
func (l *limiter) since(now time.Time) time.Duration { return max(now.Sub(l.epoch), 0) }

// sweep forgets addresses whose buckets have refilled.
func (l *limiter) sweep(now time.Time) { l.ips.Sweep(l.since(now)) }
