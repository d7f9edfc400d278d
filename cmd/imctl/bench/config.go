// Package bench is imctl's load generator: the standard workloads W1–W5 of
// DESIGN.md §10 and T1–T2 of the Tinode comparison (issue 16), run against a
// live imd from outside, verifying delivery guarantees while measuring.
package bench

import (
	"context"
	"errors"
	"fmt"
	"github.com/imdhq/imd/cmd/imctl/bench/serverwork"
	"io"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/imdhq/imd/clients/go/client"
	"github.com/imdhq/imd/cmd/imctl/adminapi"
	"github.com/imdhq/imd/cmd/imctl/bench/procstat"
)

// Workload names.
const (
	W1 = "w1" // p2p pairs, closed loop
	W2 = "w2" // small groups, closed loop
	W3 = "w3" // one big group, one paced sender
	W4 = "w4" // idle connections with heartbeats
	W5 = "w5" // history pages over two months
	T1 = "t1" // Tinode's T1: groups of 10, every member publishes closed-loop
	T2 = "t2" // Tinode's T2: one group of 100, half of it publishes closed-loop
)

// The shapes of Tinode's table in issue 16, the defaults of t1 and t2: a
// figure measured with other sizes is not comparable with it.
const (
	T1Groups     = 20
	T1GroupSize  = 10
	T2Members    = 100
	T2Publishers = 50
)

// Bounds that keep a run finite whatever the flags say.
const (
	maxDuration = 24 * time.Hour
	maxWarmup   = time.Hour
	maxPageSize = 200
)

// Config is one run.
type Config struct {
	Workload string

	// Users is, per workload: w1/w2 the online users; w4 the users the
	// connections belong to (each gets Conns/Users devices); w5 the reader
	// devices paging history.
	Users     int
	GroupSize int // w2, t1: members per group
	Groups    int // t1: groups of GroupSize, every member publishing
	Members   int // w3, t2: members of the one group, all online
	// Publishers are the members of the t2 group that send closed-loop; the
	// others only receive.
	Publishers int
	Rate       float64       // w3: messages per second from the one sender
	Conns      int           // w4
	Heartbeat  time.Duration // w4
	Messages   int           // w5: messages sent in each of the two months
	PageSize   int           // w5

	Duration time.Duration // measured window
	Warmup   time.Duration // before the window; verified, not measured

	// SourceIPs are local addresses the connections are spread over, so a
	// run is not capped by one address's ephemeral ports.
	SourceIPs []string
	// Parallel bounds concurrent admin calls and dials during setup.
	Parallel int
	// SyncMax bounds how many ACKed messages are read back through
	// SYNC_MESSAGES at the end; whole topics are sampled up to it.
	SyncMax int

	Dial client.Options // address, TLS and PROXY settings; LocalAddr is set per connection
	// Nodes, when set, are frame listeners of several nodes of one tenant: connection i dials
	// Nodes[i mod len], which replaces Dial.Addr.
	Nodes   []string
	Admin   *adminapi.Client
	Targets []procstat.Target
	// ServerProfile, when set, records the server's CPU profile over the measured window
	// (bench --imd-cpuprofile): the samples the per-stage table divides up.
	ServerProfile func(ctx context.Context, window time.Duration) error
	// ServerWork, when set, reads the Redis and MySQL counters at the start and end of the
	// measured window (bench --redis, --mysql-dsn): the servers' work per ACKed message.
	ServerWork func(ctx context.Context) (serverwork.Snapshot, error)

	// Status receives progress; Live makes it a redrawn line (a terminal)
	// instead of a line every few seconds (a log).
	Status io.Writer
	Live   bool

	// drainStall overrides how long the end of a run waits for deliveries
	// that stopped coming (tests shorten it).
	drainStall time.Duration
}

// Validate rejects settings a run cannot honour.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.Duration <= 0 || c.Duration > maxDuration {
		bad("--duration must be in (0, %s]", maxDuration)
	}
	if c.Warmup < 0 || c.Warmup > maxWarmup {
		bad("--warmup must be in [0, %s]", maxWarmup)
	}
	if c.Parallel < 1 {
		bad("--parallel must be at least 1")
	}
	if c.SyncMax < 0 {
		bad("--sync-max must not be negative")
	}
	for _, ip := range c.SourceIPs {
		if _, err := netip.ParseAddr(ip); err != nil {
			bad("--source-ips: %q is not an IP address", ip)
		}
	}
	switch c.Workload {
	case W1:
		if c.Users < 2 || c.Users%2 != 0 {
			bad("w1: --users must be even and at least 2")
		}
	case W2:
		if c.GroupSize < 2 || c.Users < c.GroupSize || c.Users%c.GroupSize != 0 {
			bad("w2: --users must be a multiple of --group-size (at least 2)")
		}
	case T1:
		if c.Groups < 1 || c.GroupSize < 2 {
			bad("t1: --groups must be at least 1 and --group-size at least 2")
		}
	case T2:
		if c.Members < 2 || c.Publishers < 1 || c.Publishers > c.Members {
			bad("t2: --members must be at least 2 and --publishers in [1, --members]")
		}
	case W3:
		if c.Members < 2 {
			bad("w3: --members must be at least 2")
		}
		if c.Rate <= 0 {
			bad("w3: --rate must be positive")
		}
	case W4:
		if c.Conns < 1 || c.Users < 1 {
			bad("w4: --conns and --users must be at least 1")
		}
		if c.Heartbeat <= 0 {
			bad("w4: --heartbeat must be positive")
		}
	case W5:
		if c.Messages < 1 || c.Users < 1 {
			bad("w5: --messages and --users must be at least 1")
		}
		if c.PageSize < 1 || c.PageSize > maxPageSize {
			bad("w5: --page-size must be in [1, %d]", maxPageSize)
		}
	default:
		bad("unknown workload %q", c.Workload)
	}
	if c.Admin == nil {
		bad("no admin API client")
	}
	return errors.Join(errs...)
}

// SplitList splits a comma-separated list (source IPs, node addresses), dropping blanks.
func SplitList(s string) []string {
	var out []string
	for ip := range strings.SplitSeq(s, ",") {
		if ip = strings.TrimSpace(ip); ip != "" {
			out = append(out, ip)
		}
	}
	return out
}

// params are the settings a report shows: the ones the workload uses.
func (c Config) params() map[string]string {
	p := map[string]string{
		"tcp":        c.Dial.Addr,
		"nodes":      strconv.Itoa(max(len(c.Nodes), 1)),
		"tenant":     c.Admin.Tenant(),
		"tls":        strconv.FormatBool(c.Dial.TLS != nil),
		"proxy":      strconv.Itoa(c.Dial.ProxyHeader),
		"source_ips": strings.Join(c.SourceIPs, " "),
	}
	if len(c.SourceIPs) == 0 {
		p["source_ips"] = "default"
	}
	switch c.Workload {
	case W1:
		p["users"] = strconv.Itoa(c.Users)
	case W2:
		p["users"] = strconv.Itoa(c.Users)
		p["group_size"] = strconv.Itoa(c.GroupSize)
	case T1:
		p["groups"] = strconv.Itoa(c.Groups)
		p["group_size"] = strconv.Itoa(c.GroupSize)
	case T2:
		p["members"] = strconv.Itoa(c.Members)
		p["publishers"] = strconv.Itoa(c.Publishers)
	case W3:
		p["members"] = strconv.Itoa(c.Members)
		p["rate"] = strconv.FormatFloat(c.Rate, 'f', -1, 64)
	case W4:
		p["conns"] = strconv.Itoa(c.Conns)
		p["users"] = strconv.Itoa(min(c.Users, c.Conns))
		p["heartbeat"] = c.Heartbeat.String()
	case W5:
		p["readers"] = strconv.Itoa(c.Users)
		p["messages_per_month"] = strconv.Itoa(c.Messages)
		p["page_size"] = strconv.Itoa(c.PageSize)
	}
	return p
}
