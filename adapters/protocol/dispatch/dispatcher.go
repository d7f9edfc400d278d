// Package dispatch is the transport-neutral server side of PROTOCOL.md §2–§5: the commands,
// their rate limits, the task pool that keeps MySQL and Redis off the transports' goroutines,
// and the session registry every connected device is pushed through. The TCP listener and
// the WebSocket endpoint each turn their connections into Clients and hand their frames to
// one shared Dispatcher, so a device is one device on either transport.
package dispatch

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/imdhq/imd/adapters/protocol"
	"github.com/imdhq/imd/adapters/protocol/session"
	"github.com/imdhq/imd/adapters/protocol/taskpool"
	"github.com/imdhq/imd/clients/go/wire"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/usecase/forward"
	"github.com/imdhq/imd/core/usecase/history"
	"github.com/imdhq/imd/core/usecase/inbox"
	"github.com/imdhq/imd/core/usecase/modify"
	presencefeed "github.com/imdhq/imd/core/usecase/presence"
	"github.com/imdhq/imd/core/usecase/reactions"
	"github.com/imdhq/imd/core/usecase/read"
	"github.com/imdhq/imd/core/usecase/receipts"
	"github.com/imdhq/imd/core/usecase/send"
	"github.com/imdhq/imd/core/usecase/typing"
	"github.com/imdhq/imd/ports"
)

// Config is what the commands and the registry need; zero fields take the defaults of seed
// 003 §2.4/§19.
type Config struct {
	// CompressMin is the body size from which responses and pushes are compressed. Default
	// 512; negative disables compression.
	CompressMin int
	// Workers and Queue size the task pool. Defaults 256 and 1024.
	Workers int
	Queue   int
	// RequestTimeout is the deadline of every request. Default 10s.
	RequestTimeout time.Duration
	// PushAckTimeout is how long a MESSAGE push waits for its PUSH_ACK. Default 30s.
	PushAckTimeout time.Duration
	// PushAckWindow bounds the MESSAGE pushes awaiting PUSH_ACK on one connection. Default 1024.
	PushAckWindow int
	// RateLimits are off where zero.
	RateLimits RateLimits
}

func (c Config) withDefaults() Config {
	protocol.Default(&c.RequestTimeout, 10*time.Second)
	protocol.Default(&c.PushAckTimeout, 30*time.Second)
	protocol.Default(&c.PushAckWindow, 1024)
	protocol.Default(&c.RateLimits.IPKeys, 1<<16)
	if c.CompressMin == 0 {
		c.CompressMin = 512
	}
	protocol.Default(&c.Workers, 256)
	protocol.Default(&c.Queue, 1024)
	return c
}

// tickInterval is how often overdue PUSH_ACKs are given up: a tenth of their timeout, within
// [10ms, 1s].
func (c Config) tickInterval() time.Duration {
	return min(max(c.PushAckTimeout/10, 10*time.Millisecond), time.Second)
}

// Deps are the use cases and ports the commands call.
type Deps struct {
	// Auth checks AUTH tokens: signature, expiry, a served tenant, not revoked.
	Auth    ports.Authenticator
	Send    *send.Service
	History *history.Service
	Modify  *modify.Service
	// Reactions serves the reaction and pin commands and the summaries of message pages; nil
	// answers those commands 50301 and sends pages without summaries.
	Reactions *reactions.Service
	// Forward serves FORWARD_MESSAGE; nil answers it 50301.
	Forward *forward.Service
	Inbox   *inbox.Service
	Read    *read.Service
	IDs     ports.IDGenerator
	Clock   ports.Clock
	Metrics ports.Metrics
	// Presence, when set, hears which devices this node holds, whatever their transport
	// (several nodes on one tenant).
	Presence session.Observer
	// Status answers QUERY_PRESENCE and SETTINGS, and Typing answers TYPING (issue 31); a
	// command whose use case is nil is unknown (40001).
	Status *presencefeed.Service
	Typing *typing.Service
	// Receipts answers READ_STATE and hears of each PUSH_ACK (issue 31); nil: READ_STATE is
	// unknown (40001) and acks tell nobody.
	Receipts *receipts.Service
	// PushTokens answers PUSH_TOKEN_SET and PUSH_TOKEN_DELETE (issue 32); nil: unknown (40001).
	PushTokens PushTokenRegistry
	// Missed, when set, takes the MESSAGE pushes a device did not acknowledge in time or
	// before its connection closed, to become mailbox rows (seed 003 §8: degrade, never
	// close the connection); it must not block.
	Missed MissedPushes
}

// MissedPushes records a push its device never acknowledged.
type MissedPushes interface {
	Record(tenant string, user int64, device uint64, m message.Message)
}

// Dispatcher serves the commands of every Client and holds the session registry.
type Dispatcher struct {
	cfg      Config
	deps     Deps
	log      *slog.Logger
	sessions *session.Registry
	handlers map[uint16]handler
	limits   *limiter
	pool     *taskpool.Pool
	started  atomic.Bool
	stopping atomic.Bool

	// base is the parent of every client's context; it outlives Start's ctx and is cancelled
	// by Stop.
	base       context.Context
	cancelBase context.CancelFunc
	tickDone   chan struct{}
}

// New builds a dispatcher; it serves nothing until Start.
func New(cfg Config, deps Deps, log *slog.Logger) *Dispatcher {
	cfg = cfg.withDefaults()
	d := &Dispatcher{
		cfg:  cfg,
		deps: deps,
		log:  log,
		sessions: session.NewRegistry(session.Options{
			CompressMin: cfg.CompressMin, AckTimeout: cfg.PushAckTimeout, AckWindow: cfg.PushAckWindow,
			Observer: deps.Presence,
		}, deps.Metrics, log),
		limits: newLimiter(cfg.RateLimits),
	}
	// Clients made before Start (none in a running server) get a context that Stop ends too.
	d.base, d.cancelBase = context.WithCancel(context.Background())
	d.handlers = map[uint16]handler{
		wire.CmdAuth:          d.auth,
		wire.CmdGenerateMsgID: d.generateMsgID,
		wire.CmdSendMessage:   d.sendMessage,
		wire.CmdSyncMessages:  d.syncMessages,
		wire.CmdGetHistory:    d.getHistory,
	}
	d.addModifyCommands()
	d.addReactionCommands()
	d.addInboxCommands()
	d.addPresenceCommands()
	d.addReceiptCommands()
	d.addPushTokenCommands()
	if deps.Missed != nil {
		d.sessions.OnUnacked(func(u session.Unacked) {
			if u.Message != nil {
				deps.Missed.Record(u.Tenant, u.User, u.Device, *u.Message)
			}
		})
	}
	return d
}

// Start runs the task pool and the PUSH_ACK timeout sweep. Clients do not inherit ctx's
// cancellation; Stop ends them.
func (d *Dispatcher) Start(ctx context.Context) {
	d.cancelBase()
	d.base, d.cancelBase = context.WithCancel(context.WithoutCancel(ctx))
	d.pool = taskpool.New(d.cfg.Workers, d.cfg.Queue, d.deps.Metrics)
	d.tickDone = make(chan struct{})
	go d.tick(d.base)
	d.started.Store(true)
}

// limitSweepEvery is how often the IP rate-limit table forgets refilled addresses.
const limitSweepEvery = 10 * time.Second

// tick gives up overdue PUSH_ACKs and trims the IP rate-limit table until ctx ends.
func (d *Dispatcher) tick(ctx context.Context) {
	defer close(d.tickDone)
	t := time.NewTicker(d.cfg.tickInterval())
	defer t.Stop()
	lastSweep := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			d.sessions.ExpireAcks(now)
			if now.Sub(lastSweep) >= limitSweepEvery {
				lastSweep = now
				d.limits.sweep(now)
			}
		}
	}
}

// Stop shuts the sessions down gracefully (seed 003 §18): from now on requests get 50301 and
// pushes fail over to the mailbox; the task pool drains, so accepted requests still get their
// answers; then every client's context ends. Kicking the clients is the transports' part.
func (d *Dispatcher) Stop(ctx context.Context) error {
	if !d.stopping.CompareAndSwap(false, true) {
		return nil
	}
	d.sessions.Stop()
	if d.pool == nil {
		d.cancelBase()
		return nil
	}
	err := d.pool.Close(ctx)
	d.cancelBase()
	<-d.tickDone
	return err
}

// Serving reports that the dispatcher was started and not stopped: a transport whose
// listener runs apart from it (the WebSocket endpoint) refuses connections otherwise.
func (d *Dispatcher) Serving() bool { return d.started.Load() && !d.stopping.Load() }

// Sessions is the registry of connected devices: the node's ports.DevicePusher and the
// place kicks go through.
func (d *Dispatcher) Sessions() *session.Registry { return d.sessions }

// Handle serves cmd with h, replacing what served it: tests use it to reach the request
// deadline and panic handling. h runs in the task pool; it returns the response's data or its
// error, as every command does. Call it before Start.
func (d *Dispatcher) Handle(cmd uint16, h func(ctx context.Context) (any, error)) {
	d.handlers[cmd] = func(ctx context.Context, _ *request) (any, error) { return h(ctx) }
}
