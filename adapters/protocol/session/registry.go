package session

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/imdhq/imd/adapters/protocol"
	"github.com/imdhq/imd/clients/go/frame"
	"github.com/imdhq/imd/clients/go/wire"
	"github.com/imdhq/imd/core/domain/delivery"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/ports"
)

// seqOffset is where sequence_id sits in a frame header (PROTOCOL §2: magic u16, version u8,
// command u16, flags u16, request_id u64). A push body is encoded once and every connection
// gets a copy of the header with its own sequence id.
const seqOffset = 2 + 1 + 2 + 2 + 8

// shardCount spreads the registry lock so concurrent fan-outs rarely meet.
const shardCount = 64

type userKey struct {
	tenant string
	user   int64
}

type shard struct {
	mu    sync.RWMutex
	users map[userKey][]*Conn // one entry per device
}

// Options configure a Registry.
type Options struct {
	// CompressMin is the body size from which pushes are compressed; 0 disables compression.
	CompressMin int
	// AckTimeout is how long a MESSAGE push waits for its PUSH_ACK before it counts as
	// unacknowledged (push_ack_timeout_total).
	AckTimeout time.Duration
	// AckWindow bounds the MESSAGE pushes tracked per connection; beyond it the oldest counts
	// as unacknowledged at once, so a client that never acks cannot grow the server's memory.
	AckWindow int
	// Observer, when set, hears which devices this node holds (presence for many nodes).
	Observer Observer
}

// Observer hears of the devices the registry holds: Bound when a device gets its connection
// here (a replacing connection counts again), Unbound when the device has none here any more.
// Bound runs on the goroutine that authenticated the connection and may wait on I/O; Unbound
// runs on event loops and must not.
type Observer interface {
	Bound(tenant string, user int64, device uint64)
	Unbound(tenant string, user int64, device uint64)
}

// Registry maps authenticated (tenant, user, device) to connections. It is the single-node
// ports.Pusher; a device has at most one connection.
type Registry struct {
	opts      Options
	metrics   ports.Metrics
	log       *slog.Logger
	stopped   atomic.Bool
	onUnacked atomic.Pointer[func(Unacked)]
	shards    [shardCount]shard
}

// NewRegistry returns an empty registry.
func NewRegistry(opts Options, metrics ports.Metrics, log *slog.Logger) *Registry {
	r := &Registry{opts: opts, metrics: metrics, log: log}
	for i := range r.shards {
		r.shards[i].users = make(map[userKey][]*Conn)
	}
	return r
}

// OnUnacked sets what happens to MESSAGE pushes a device did not acknowledge; nil (the
// default) only counts the timeouts. f runs on the goroutine that noticed: a deliver worker,
// an event loop or the timeout sweep, so it must hand slow work (a mailbox write) elsewhere.
func (r *Registry) OnUnacked(f func(Unacked)) {
	if f == nil {
		r.onUnacked.Store(nil)
		return
	}
	r.onUnacked.Store(&f)
}

// unacked reports pushes given up for id: timeouts are counted, every one goes to the
// OnUnacked handler.
func (r *Registry) unacked(id Identity, msgs []*message.Message, closed bool) {
	if len(msgs) == 0 {
		return
	}
	if !closed {
		r.metrics.Add("push_ack_timeout_total", float64(len(msgs)))
	}
	f := r.onUnacked.Load()
	if f == nil {
		return
	}
	for _, m := range msgs {
		(*f)(Unacked{Identity: id, Message: m, Closed: closed})
	}
}

// ExpireAcks gives up the pushes whose PUSH_ACK is overdue at now. Call it periodically.
func (r *Registry) ExpireAcks(now time.Time) {
	type late struct {
		id   Identity
		msgs []*message.Message
	}
	var found []late
	for i := range r.shards {
		sh := &r.shards[i]
		sh.mu.RLock()
		for _, conns := range sh.users {
			for _, c := range conns {
				if msgs := c.acks.expire(now); len(msgs) > 0 {
					found = append(found, late{c.Identity(), msgs})
				}
			}
		}
		sh.mu.RUnlock()
	}
	for _, l := range found {
		r.unacked(l.id, l.msgs, false)
	}
}

func (r *Registry) shard(user int64) *shard {
	// Fibonacci hashing: sequential user ids land on different shards.
	return &r.shards[(uint64(user)*0x9E3779B97F4A7C15)>>(64-6)]
}

// Bind publishes c as the connection of id. An older connection of the same device is kicked
// with reason "replaced" (PROTOCOL §3); replaced reports whether that happened.
func (r *Registry) Bind(c *Conn, id Identity) (replaced bool) {
	c.identity.Store(&id)
	k := userKey{id.Tenant, id.User}
	sh := r.shard(id.User)
	var old *Conn
	sh.mu.Lock()
	conns := sh.users[k]
	for i, other := range conns {
		if other.Identity().Device == id.Device {
			old, conns[i] = other, c
			break
		}
	}
	if old == nil {
		sh.users[k] = append(conns, c)
	}
	sh.mu.Unlock()
	if o := r.opts.Observer; o != nil && old != c {
		o.Bound(id.Tenant, id.User, id.Device)
	}
	if old == nil || old == c {
		return false
	}
	old.Kick(wire.KickReasonReplaced)
	return true
}

// Unbind removes c if it is still the connection of its device; a connection that was
// replaced or never bound is ignored. Call it when c has closed: the MESSAGE pushes it never
// acknowledged are given up.
func (r *Registry) Unbind(c *Conn) {
	id := c.Identity()
	if id.Device == 0 {
		return
	}
	r.unacked(id, c.acks.drain(), true)
	k := userKey{id.Tenant, id.User}
	sh := r.shard(id.User)
	sh.mu.Lock()
	conns := sh.users[k]
	removed := false
	for i, other := range conns {
		if other == c {
			conns[i] = conns[len(conns)-1]
			conns[len(conns)-1] = nil
			conns = conns[:len(conns)-1]
			removed = true
			break
		}
	}
	if len(conns) == 0 {
		delete(sh.users, k)
	} else {
		sh.users[k] = conns
	}
	sh.mu.Unlock()
	if o := r.opts.Observer; o != nil && removed {
		o.Unbound(id.Tenant, id.User, id.Device)
	}
}

// Kick sends KICK {reason} to the device's connection and closes it; device 0 kicks every
// device of the user. It returns how many connections were kicked.
func (r *Registry) Kick(tenant string, user int64, device uint64, reason string) int {
	k := userKey{tenant, user}
	sh := r.shard(user)
	var kicked []*Conn
	sh.mu.Lock()
	conns := sh.users[k]
	kept := conns[:0]
	for _, c := range conns {
		if device == 0 || c.Identity().Device == device {
			kicked = append(kicked, c)
		} else {
			kept = append(kept, c)
		}
	}
	clear(conns[len(kept):])
	if len(kept) == 0 {
		delete(sh.users, k)
	} else {
		sh.users[k] = kept
	}
	sh.mu.Unlock()
	for _, c := range kicked {
		if o := r.opts.Observer; o != nil {
			id := c.Identity()
			o.Unbound(id.Tenant, id.User, id.Device)
		}
		c.Kick(reason)
	}
	return len(kicked)
}

// Stop makes every later Push report its connected devices as failed: during shutdown
// nothing more is sent, and the deliver worker falls back to the mailbox.
func (r *Registry) Stop() { r.stopped.Store(true) }

// Push writes p to every connected device of the recipients except the sender's sending
// device. It never blocks: a device over its outbound limit loses the frame (counted in
// outbound_drop_total and reported as Failed) and keeps its connection.
func (r *Registry) Push(ctx context.Context, tenant string, t delivery.Target, p delivery.Push) delivery.Report {
	return r.push(ctx, tenant, []delivery.Addressed{{Target: t, Push: p}}, nil)[0]
}

// push writes each push to its target as Push does, and returns a report per push; miss, when
// not nil, holds one reach per push, which collects who that push did not reach (see
// PushReach). All the frames of one call bound for one connection go out in one write, in
// push order: a backlog handled together costs each connection one write, not one per message.
func (r *Registry) push(ctx context.Context, tenant string, pushes []delivery.Addressed, miss []reach) []delivery.Report {
	var (
		reps     = make([]delivery.Report, len(pushes))
		out      outbox
		overflow []Unacked // reported once no lock is held
		ackDue   = time.Now().Add(r.opts.AckTimeout)
	)
	missOf := func(i int) *reach {
		if miss == nil {
			return nil
		}
		return &miss[i]
	}
	// Pushes to the same recipients (the messages of one topic in a pass) look each recipient
	// and connection up once: at 10,000 members that was most of a pass's own CPU.
	for start := 0; start < len(pushes); {
		end := start + 1
		for end < len(pushes) && sameRecipients(pushes[start].Target.Recipients, pushes[end].Target.Recipients) {
			end++
		}
		// encoded[g]: header+body with sequence_id 0, built on the push's first online device.
		encoded, encErr := make([][]byte, end-start), make([]error, end-start)
		for _, user := range pushes[start].Target.Recipients {
			sh := r.shard(user)
			sh.mu.RLock()
			conns := sh.users[userKey{tenant, user}]
			if len(conns) == 0 {
				for i := start; i < end; i++ {
					reps[i].Offline++
					missOf(i).offline(user)
				}
			}
			for _, c := range conns {
				device := c.Identity().Device
				q := -1 // c's queue in out, once it has one
				for i := start; i < end; i++ {
					t, p, m, g := pushes[i].Target, pushes[i].Push, missOf(i), i-start
					if (user == t.Sender && device == t.ExcludeDevice) || !c.takes(p.Kind) {
						continue
					}
					if r.stopped.Load() {
						reps[i].Failed++
						m.failed(user, c)
						continue
					}
					if p.Kind == delivery.KindMessage && p.Message != nil && !c.pushed.first(p.Message.Topic, p.Message.Seq) {
						// Queued on this connection before: this device has it (or a
						// MISSED_MESSAGE row says it failed), so it counts as delivered.
						reps[i].Delivered++
						continue
					}
					if encoded[g] == nil && encErr[g] == nil {
						encoded[g], encErr[g] = r.encode(p)
					}
					if encErr[g] != nil {
						reps[i].Failed++
						m.failed(user, c)
						continue
					}
					seq, dropped := r.numberPush(c, p, ackDue)
					if dropped != nil {
						overflow = append(overflow, Unacked{Identity: c.Identity(), Message: dropped})
					}
					if q < 0 {
						q = out.queue(c, user, end-start)
					}
					out.add(q, i, seq, encoded[g])
				}
			}
			sh.mu.RUnlock()
		}
		for g, err := range encErr {
			if err != nil {
				r.log.ErrorContext(ctx, "push not encodable", "kind", pushes[start+g].Push.Kind, "err", err)
			}
		}
		start = end
	}
	took := offerPaced(ctx, out.queues)
	for i, q := range out.queues {
		for j, f := range q.frames {
			if j < took[i] {
				reps[f.push].Delivered++
				continue
			}
			// Reported as failed here, so it is not also an ack timeout later.
			q.conn.acks.ack(f.seq)
			if m := pushes[f.push].Push.Message; m != nil {
				q.conn.pushed.refused(m.Topic, m.Seq)
			}
			reps[f.push].Failed++
			missOf(f.push).failed(q.user, q.conn)
			r.metrics.Inc("outbound_drop_total")
		}
	}
	for _, u := range overflow {
		r.unacked(u.Identity, []*message.Message{u.Message}, false)
	}
	return reps
}

// sameRecipients reports whether a and b are the same slice (not merely equal): the deliver
// worker hands every message of a topic in a pass the same member list.
func sameRecipients(a, b []int64) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// numberPush gives p its sequence id on c; a MESSAGE is tracked until its PUSH_ACK. It
// returns the oldest tracked message when c's window was full and it was given up for this one.
func (r *Registry) numberPush(c *Conn, p delivery.Push, ackDue time.Time) (seq uint32, dropped *message.Message) {
	if p.Kind != delivery.KindMessage {
		return c.nextPushSeq(), nil
	}
	return c.acks.track(c.nextPushSeq, p.Message, ackDue, r.opts.AckWindow)
}

// encode builds the push frame once per fan-out, with sequence_id 0.
func (r *Registry) encode(p delivery.Push) ([]byte, error) {
	var (
		cmd  uint16
		data any
	)
	switch p.Kind {
	case delivery.KindMessage:
		if p.Message == nil {
			return nil, errors.New("session: message push without a message")
		}
		cmd, data = wire.CmdMessage, protocol.FromMessage(*p.Message)
	case delivery.KindRead:
		cmd, data = wire.CmdReadMessage, p.Data
	case delivery.KindEvent:
		cmd, data = wire.CmdEvent, p.Data
	case delivery.KindPresence:
		cmd, data = wire.CmdPresence, p.Data
	case delivery.KindTyping:
		cmd, data = wire.CmdTypingNotice, p.Data
	case delivery.KindReceipt:
		cmd, data = wire.CmdReceipt, p.Data
	default:
		return nil, fmt.Errorf("session: unknown push kind %q", p.Kind)
	}
	body, err := wire.OK(0, data)
	if err != nil {
		return nil, fmt.Errorf("session: encode %s push: %w", p.Kind, err)
	}
	f, err := frame.Append(nil, cmd, 0, 0, body, r.opts.CompressMin)
	if err != nil {
		return nil, fmt.Errorf("session: frame %s push: %w", p.Kind, err)
	}
	return f, nil
}
