// Package ratelimit holds in-memory request budgets cheap enough to check on an event loop:
// every decision is O(1), allocation-free for a known key, and never waits or does I/O
// (seed 003 §6.1: rate decisions belong on the loop, Redis calls do not).
//
// Buckets follow GCRA, the "virtual scheduling" form of a token bucket: one int64 per bucket
// (the theoretical arrival time of the next request) instead of a token count and a
// timestamp. A Rate of Count per Per allows a burst of Count requests from a full bucket and
// Count per Per sustained.
//
// Times are monotonic readings given by the caller as a non-negative time.Duration elapsed
// since an instant it keeps fixed for the limiter's lifetime, so a wall-clock step never
// blocks or frees anyone.
//
// It lives with the transports' shared code, not in core: only the listeners (TCP, WebSocket,
// HTTP, through adapters/protocol/dispatch) limit requests, and no use case sees a rate.
package ratelimit

import (
	"time"
)

// Rate is a budget of Count requests per Per. A zero Count means unlimited.
type Rate struct {
	Count int
	Per   time.Duration
}

// Limit is a Rate prepared for decisions.
type Limit struct {
	interval  time.Duration // time one request costs
	tolerance time.Duration // how far ahead of now the schedule may run: the burst
}

// NewLimit prepares r. A Rate with no Count or no Per is unlimited, and so is one faster
// than a request per nanosecond.
func NewLimit(r Rate) Limit {
	if r.Count <= 0 || r.Per <= 0 {
		return Limit{}
	}
	interval := r.Per / time.Duration(r.Count)
	return Limit{interval: interval, tolerance: interval * time.Duration(r.Count-1)}
}

// Unlimited reports whether l lets everything through.
func (l Limit) Unlimited() bool { return l.interval == 0 }

// Bucket is one budget's state. The zero value is a full bucket. It is not safe for
// concurrent use: keep it where one goroutine owns it (a connection on its event loop) or
// under a lock (Shared).
type Bucket struct {
	tat time.Duration // theoretical arrival time of the next request
}

// Allow spends one request of l at now and reports whether the budget had it.
func (b *Bucket) Allow(l Limit, now time.Duration) bool {
	if l.Unlimited() {
		return true
	}
	tat := max(b.tat, now)
	if tat-now > l.tolerance {
		return false
	}
	b.tat = tat + l.interval
	return true
}

// Refund gives back the request the last successful Allow spent, for a request that another
// budget refused after all.
func (b *Bucket) Refund(l Limit) {
	b.tat -= l.interval
}

// full reports whether the bucket has refilled completely by now, i.e. it is
// indistinguishable from a new one.
func (b Bucket) full(now time.Duration) bool { return b.tat <= now }
