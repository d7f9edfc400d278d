// Package redis implements the Redis-backed ports with rueidis: the atomic seq script, the
// month state, the topic route cache and the reliable deliver queue (DESIGN §3–§5). Every key
// comes from Keys, so all keys of a tenant share its hash tag and Lua scripts stay in one slot.
//
// It needs Redis ≥ 6.2 (ZADD LT, BLMOVE, LMOVE).
package redis

import (
	"context"
	"crypto/tls"
	"fmt"
	"strings"
	"time"

	"github.com/redis/rueidis"
)

// Option adjusts the rueidis client options before the client is built (auth, TLS, pool sizes).
type Option func(*rueidis.ClientOption)

// WithAuth authenticates every connection: username "" with a password is requirepass (the
// default user), both are an ACL user.
func WithAuth(username, password string) Option {
	return func(o *rueidis.ClientOption) { o.Username, o.Password = username, password }
}

// WithTLS connects over TLS with c; nil keeps plain TCP.
func WithTLS(c *tls.Config) Option {
	return func(o *rueidis.ClientOption) { o.TLSConfig = c }
}

// WithSentinel asks the sentinels at addrs (comma-separated) for the master of masterSet and
// follows its failovers, instead of connecting to Open's addr. Username and password are the
// sentinels' own AUTH; refresh > 0 also asks them that often, since a missed +switch-master
// event would otherwise leave the client on a demoted master (rueidis SentinelOption).
func WithSentinel(masterSet, addrs, username, password string, refresh time.Duration) Option {
	return func(o *rueidis.ClientOption) {
		o.InitAddress = splitAddrs(addrs)
		o.Sentinel = rueidis.SentinelOption{MasterSet: masterSet, Username: username, Password: password,
			TopologyRefreshInterval: refresh}
	}
}

func splitAddrs(addrs string) []string {
	out := strings.Split(addrs, ",")
	for i, a := range out {
		out[i] = strings.TrimSpace(a)
	}
	return out
}

// Open connects to Redis at addr (a comma-separated list of seed addresses; rueidis detects a
// cluster by itself), or through the sentinels WithSentinel names, and checks it answers. Auto-pipelining stays on: it is what lets thousands
// of concurrent senders share a few connections.
func Open(ctx context.Context, addr string, opts ...Option) (rueidis.Client, error) {
	o := rueidis.ClientOption{
		InitAddress: splitAddrs(addr),
		// No client-side caching is used, so skip CLIENT TRACKING on every connection.
		DisableCache: true,
	}
	for _, opt := range opts {
		opt(&o)
	}
	// The sentinels speak TLS when the master does: one redis.tls for the whole deployment.
	o.Sentinel.TLSConfig = o.TLSConfig
	c, err := rueidis.NewClient(o)
	if err != nil {
		return nil, fmt.Errorf("connect redis %s: %w", strings.Join(o.InitAddress, ","), err)
	}
	if err := c.Do(ctx, c.B().Ping().Build()).Error(); err != nil {
		c.Close()
		return nil, fmt.Errorf("ping redis %s: %w", strings.Join(o.InitAddress, ","), err)
	}
	return c, nil
}

// Ready reports whether Redis answers a PING, for /readyz.
func Ready(c rueidis.Client) func(ctx context.Context) error {
	return func(ctx context.Context) error { return c.Do(ctx, c.B().Ping().Build()).Error() }
}
