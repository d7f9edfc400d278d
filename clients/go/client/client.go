package client

import (
	"context"
	crand "crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/imdhq/imd/clients/go/wire"
)

// Defaults for zero Config fields.
const (
	// DefaultHeartbeat is well inside the server's default idle timeout (120 s),
	// so a quiet client keeps its connection.
	DefaultHeartbeat   = 30 * time.Second
	DefaultMinBackoff  = 250 * time.Millisecond
	DefaultMaxBackoff  = 30 * time.Second
	DefaultEventBuffer = 1024
)

// ErrReplaced ends a Client whose device authenticated again elsewhere (KICK
// "replaced"): reconnecting would only kick the newer connection in turn.
var ErrReplaced = errors.New("client: replaced by a newer connection of the same device")

// Config configures a Client.
type Config struct {
	// Dial opens one connection; Dialer(Options{…}) is the usual one.
	Dial func(ctx context.Context) (*Conn, error)
	// Token returns the token of each AUTH. It is called at every
	// (re)connect, so it may hand out a fresh one; StaticToken keeps one.
	Token    func(ctx context.Context) (string, error)
	DeviceID uint64
	Platform string // sent with AUTH: "ios", "android", "web", …
	// Subscribe names the live pushes to get (wire.SubscribePresence, wire.SubscribeTyping,
	// wire.SubscribeReceipt);
	// they arrive on Events as pushes of their commands.
	Subscribe []string
	// Heartbeat is the time between HEARTBEATs (0 = DefaultHeartbeat). A
	// heartbeat that fails closes the connection, and the client reconnects.
	Heartbeat time.Duration
	// MinBackoff and MaxBackoff bound the wait before a reconnect attempt; it
	// doubles after each failed attempt, with jitter, so a restarted server
	// is not hit by every client at once.
	MinBackoff, MaxBackoff time.Duration
	// Resume continues from a State saved by an earlier run. Nil starts now:
	// what happened before the first AUTH is history, not replayed.
	Resume      *State
	EventBuffer int          // capacity of Events (0 = DefaultEventBuffer)
	Log         *slog.Logger // nil = no logging
}

// Dialer returns a Config.Dial that dials o: TCP, TLS, PROXY header or
// WebSocket, as o says.
func Dialer(o Options) func(ctx context.Context) (*Conn, error) {
	return func(ctx context.Context) (*Conn, error) { return Dial(ctx, o) }
}

// StaticToken returns a Config.Token that always returns token.
func StaticToken(token string) func(ctx context.Context) (string, error) {
	return func(context.Context) (string, error) { return token, nil }
}

// State is where catch-up resumes: the cursors of the last SYNC_INBOX_FINISH
// and, per topic, the seq up to which every message was delivered. It
// marshals to JSON, so an app can keep it across runs.
type State struct {
	MailboxSeq  int64 `json:"mailbox_seq"`
	DialogScore int64 `json:"dialog_score"`
	// Horizon (Unix ms, server clock) is where history ends for a
	// conversation the client has no seq of: its messages created before
	// are not replayed.
	Horizon int64            `json:"horizon"`
	Topics  map[string]int64 `json:"topics"`
}

// EventKind says what an Event carries.
type EventKind int

const (
	// EventConnected: a connection is authenticated (Me); catch-up follows.
	EventConnected EventKind = iota + 1
	// EventDisconnected: the connection ended (Err); the client reconnects
	// unless it is closing, was replaced, or AUTH was refused.
	EventDisconnected
	// EventMessage: a message of another device (Message), live or, with
	// Replayed, missed while disconnected. Each (topic, seq) comes once.
	EventMessage
	// EventPush: any other server push (Push): KICK, EVENT, the read mark
	// of another device (READ_MESSAGE), a failed MESSAGE.
	EventPush
	// EventSynced: catch-up after EventConnected is over; what follows is
	// live. Err is set when catch-up failed (the client then reconnects and
	// tries again).
	EventSynced
)

// Event is one thing that happened on a Client.
type Event struct {
	Kind     EventKind
	Message  *wire.Message
	Replayed bool
	Push     Push
	Me       wire.AuthResponse
	Err      error
}

// Client is a connection that heals itself: it heartbeats, reconnects with
// backoff, resends unacknowledged sends with their client_msg_id, and after
// each reconnect replays the messages it missed through SYNC_INBOX and
// SYNC_MESSAGES, never one the caller already got. Its methods are safe for
// concurrent use.
type Client struct {
	cfg    Config
	log    *slog.Logger
	events chan Event
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{} // closed when the client has ended

	mu      sync.Mutex
	conn    *Conn         // the authenticated connection, nil while reconnecting
	changed chan struct{} // closed and replaced whenever conn changes or the client ends
	me      wire.AuthResponse
	err     error // why the client ended
	stop    error // set by KICK "replaced": do not reconnect

	state        State // cursors and horizon; Topics unused here, see seen
	mailboxKnown bool  // the mailbox cursor is a real position, not 0 of a fresh start
	seen         map[string]*topicSeen
	liveEvents   map[int64]struct{} // mailbox seqs of EVENT pushes since the last catch-up
	sending      map[string]int     // client_msg_ids of sends not acknowledged yet: a replay skips them
	holding      bool               // catch-up runs: live messages wait in held
	held         []wire.Message
}

// Connect makes the first connection and authenticates, then keeps the
// client connected until Close. It returns the dial or AUTH error of that
// first attempt; later ones are retried.
func Connect(ctx context.Context, cfg Config) (*Client, error) {
	if cfg.Dial == nil || cfg.Token == nil {
		return nil, errors.New("client: Config needs Dial and Token")
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = DefaultHeartbeat
	}
	if cfg.MinBackoff <= 0 {
		cfg.MinBackoff = DefaultMinBackoff
	}
	if cfg.MaxBackoff < cfg.MinBackoff {
		cfg.MaxBackoff = max(DefaultMaxBackoff, cfg.MinBackoff)
	}
	if cfg.EventBuffer <= 0 {
		cfg.EventBuffer = DefaultEventBuffer
	}
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Client{
		cfg: cfg, log: log, events: make(chan Event, cfg.EventBuffer), done: make(chan struct{}),
		changed: make(chan struct{}), seen: make(map[string]*topicSeen), liveEvents: make(map[int64]struct{}),
		sending: make(map[string]int),
	}
	if r := cfg.Resume; r != nil {
		c.state = State{MailboxSeq: r.MailboxSeq, DialogScore: r.DialogScore, Horizon: r.Horizon}
		c.mailboxKnown = true
		for topic, floor := range r.Topics {
			c.topic(topic).setFloor(floor)
		}
	}
	conn, err := c.open(ctx)
	if err != nil {
		return nil, err
	}
	// The client lives until Close, not as long as the caller's ctx.
	c.ctx, c.cancel = context.WithCancel(context.WithoutCancel(ctx))
	go c.run(conn)
	return c, nil
}

// Events delivers what happens, in order, and is closed when the client has
// ended. The caller must keep draining it: while it is full, no push is read,
// so no response either, and Send waits.
func (c *Client) Events() <-chan Event { return c.events }

// Me is the identity of the last successful AUTH.
func (c *Client) Me() wire.AuthResponse {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.me
}

// Err is why the client ended (ErrClosed after Close, ErrReplaced, a refused
// AUTH), nil while it runs.
func (c *Client) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Close ends the client and its connection. Sends still waiting fail with
// ErrClosed; whether they were stored, a later resend with the same
// client_msg_id tells.
func (c *Client) Close() error {
	c.cancel()
	<-c.done
	return nil
}

// State is the position to pass as Config.Resume in a later run.
func (c *Client) State() State {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.state
	s.Topics = make(map[string]int64, len(c.seen))
	for topic, t := range c.seen {
		if t.floorKnown {
			s.Topics[topic] = t.floor
		} else {
			s.Topics[topic] = t.high()
		}
	}
	return s
}

// Send sends a message and waits for its SEND_ACK, across reconnects: a send
// the connection lost is sent again, with the same client_msg_id, on the
// next one, and 50301 (busy) is retried after a backoff, so the server stores
// it once. An empty ClientMsgID is filled with a random one. Other error
// codes return a *CodeError.
func (c *Client) Send(ctx context.Context, req wire.SendMessageRequest) (wire.SendAck, error) {
	if req.ClientMsgID == "" {
		req.ClientMsgID = crand.Text()
	}
	c.mu.Lock()
	c.sending[req.ClientMsgID]++
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		if c.sending[req.ClientMsgID]--; c.sending[req.ClientMsgID] <= 0 {
			delete(c.sending, req.ClientMsgID)
		}
		c.mu.Unlock()
	}()
	delay := c.cfg.MinBackoff
	for {
		conn, err := c.current(ctx)
		if err != nil {
			return wire.SendAck{}, err
		}
		ack, err := conn.Send(ctx, req)
		if err == nil {
			c.mu.Lock()
			c.topic(ack.Topic).add(ack.Seq) // the replay after a reconnect must not return it
			c.mu.Unlock()
			return ack, nil
		}
		if ctx.Err() != nil {
			return wire.SendAck{}, fmt.Errorf("client: send %s: %w", req.ClientMsgID, err)
		}
		if ce, ok := errors.AsType[*CodeError](err); ok && ce.Code != wire.CodeBusy {
			return wire.SendAck{}, err
		}
		// Busy, a timeout, or the connection went: try again with the same
		// client_msg_id, on this connection if it still stands.
		c.log.DebugContext(ctx, "resending", "client_msg_id", req.ClientMsgID, "err", err)
		if err := c.sleep(ctx, delay); err != nil {
			return wire.SendAck{}, err
		}
		delay = min(2*delay, c.cfg.MaxBackoff)
	}
}

// Do runs f on the current connection, waiting for one while the client
// reconnects; for the requests the Client has no method of its own for
// (History, READ_MESSAGE, Request…). f is not retried.
func (c *Client) Do(ctx context.Context, f func(*Conn) error) error {
	conn, err := c.current(ctx)
	if err != nil {
		return err
	}
	return f(conn)
}

// History is Conn.History on the current connection.
func (c *Client) History(ctx context.Context, topic string, before int64, limit int) (msgs []wire.Message, err error) {
	err = c.Do(ctx, func(conn *Conn) error {
		msgs, err = conn.History(ctx, topic, before, limit)
		return err
	})
	return msgs, err
}

// MarkRead is Conn.MarkRead on the current connection.
func (c *Client) MarkRead(ctx context.Context, topic string, seq int64) (mark wire.ReadResponse, err error) {
	err = c.Do(ctx, func(conn *Conn) error {
		mark, err = conn.MarkRead(ctx, topic, seq)
		return err
	})
	return mark, err
}

// Dialogs is Conn.Dialogs on the current connection: the whole conversation
// list, apart from catch-up, which only fetches what changed.
func (c *Client) Dialogs(ctx context.Context) (dialogs []wire.Dialog, err error) {
	err = c.Do(ctx, func(conn *Conn) error {
		dialogs, err = conn.Dialogs(ctx)
		return err
	})
	return dialogs, err
}

// SyncMessages is Conn.SyncMessages on the current connection. Messages it
// returns are not marked delivered: Events still replays what it missed.
func (c *Client) SyncMessages(ctx context.Context, topic string, since int64, limit int) (msgs []wire.Message, finish wire.SyncMessagesFinish, err error) {
	err = c.Do(ctx, func(conn *Conn) error {
		msgs, finish, err = conn.SyncMessages(ctx, topic, since, limit)
		return err
	})
	return msgs, finish, err
}

// current returns the authenticated connection, waiting while there is none.
func (c *Client) current(ctx context.Context) (*Conn, error) {
	for {
		c.mu.Lock()
		conn, changed, err := c.conn, c.changed, c.err
		c.mu.Unlock()
		if err != nil {
			return nil, err
		}
		if conn != nil && conn.Err() == nil {
			return conn, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, fmt.Errorf("client: waiting for a connection: %w", ctx.Err())
		}
	}
}

func (c *Client) setConn(conn *Conn) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.conn = conn
	close(c.changed)
	c.changed = make(chan struct{})
}

// jittered is a random half to all of d: the clients a stopping server
// drains (KICK "shutdown") or a restarted one lost come back spread out,
// not at one instant (PROTOCOL §5).
func jittered(d time.Duration) time.Duration { return d/2 + rand.N(d/2+1) }

// sleep waits d with jitter, or until ctx or the client ends.
func (c *Client) sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(jittered(d))
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-c.done:
		return c.Err()
	}
}

// open dials and authenticates one connection.
func (c *Client) open(ctx context.Context) (*Conn, error) {
	conn, err := c.cfg.Dial(ctx)
	if err != nil {
		return nil, err
	}
	token, err := c.cfg.Token(ctx)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("client: token: %w", err)
	}
	me, err := conn.AuthWith(ctx, wire.AuthRequest{Token: token, DeviceID: c.cfg.DeviceID, Platform: c.cfg.Platform, Subscribe: c.cfg.Subscribe})
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("client: auth: %w", err)
	}
	c.mu.Lock()
	c.me = me
	// A fresh start: conversations active from now on are caught up after a
	// reconnect, older activity is history.
	if c.state.Horizon == 0 {
		c.state.Horizon = me.ServerTime
	}
	if c.state.DialogScore == 0 {
		c.state.DialogScore = me.ServerTime
	}
	c.mu.Unlock()
	return conn, nil
}

// run keeps the client connected until Close or a reason to stop.
func (c *Client) run(conn *Conn) {
	defer close(c.events)
	for {
		err := c.serve(conn)
		c.emit(Event{Kind: EventDisconnected, Err: err})
		if conn, err = c.reconnect(); err != nil {
			c.mu.Lock()
			c.err = err
			close(c.changed)
			c.mu.Unlock()
			close(c.done)
			return
		}
	}
}

// reconnect retries open with backoff. It gives up when the client is closed
// or replaced, or when AUTH is refused for good.
func (c *Client) reconnect() (*Conn, error) {
	delay := c.cfg.MinBackoff
	for attempt := 1; ; attempt++ {
		c.mu.Lock()
		stop := c.stop
		c.mu.Unlock()
		if stop != nil {
			return nil, stop
		}
		if c.ctx.Err() != nil {
			return nil, ErrClosed
		}
		if c.sleep(c.ctx, delay) != nil {
			return nil, ErrClosed
		}
		conn, err := c.open(c.ctx)
		if err == nil {
			c.log.Info("reconnected", "attempt", attempt)
			return conn, nil
		}
		if ce, ok := errors.AsType[*CodeError](err); ok && refusedForGood(ce.Code) {
			return nil, err
		}
		c.log.Warn("reconnect failed", "attempt", attempt, "err", err)
		delay = min(2*delay, c.cfg.MaxBackoff)
	}
}

// refusedForGood reports whether an AUTH answered with code will not succeed
// on retry: a bad token or device id. Busy and rate limits pass.
func refusedForGood(code int) bool {
	return code == wire.CodeUnauthenticated || code == wire.CodeInvalidArgument || code == wire.CodeForbidden
}

// serve runs one authenticated connection: it forwards pushes, catches up,
// heartbeats, and returns why the connection ended.
func (c *Client) serve(conn *Conn) error {
	c.mu.Lock()
	c.holding = true
	me := c.me
	c.mu.Unlock()
	forwarded := make(chan struct{})
	go func() {
		defer close(forwarded)
		c.forward(conn)
	}()
	c.setConn(conn)
	c.emit(Event{Kind: EventConnected, Me: me})
	err := c.catchUp(conn)
	if err != nil {
		err = fmt.Errorf("client: catch-up: %w", err)
		conn.fail(err)
	}
	c.release()
	c.log.Debug("caught up", "err", err)
	c.emit(Event{Kind: EventSynced, Err: err})

	tick := time.NewTicker(c.cfg.Heartbeat)
	defer tick.Stop()
	for conn.Err() == nil {
		select {
		case <-conn.Closed():
		case <-c.ctx.Done():
			conn.Close()
		case <-tick.C:
			if err := conn.Heartbeat(c.ctx); err != nil && conn.Err() == nil {
				conn.fail(fmt.Errorf("client: heartbeat: %w", err))
			}
		}
	}
	c.setConn(nil)
	<-forwarded
	return conn.Err()
}

// forward turns the pushes of conn into events until it closes. Messages wait
// in held while catch-up runs, so the replay comes first and in order.
func (c *Client) forward(conn *Conn) {
	for p := range conn.Pushes() {
		switch {
		case p.Message != nil:
			c.mu.Lock()
			if c.holding {
				c.held = append(c.held, *p.Message)
				c.mu.Unlock()
				continue
			}
			c.mu.Unlock()
			c.offer(*p.Message, false)
			continue
		case p.Command == wire.CmdKick:
			var k wire.Kick
			if json.Unmarshal(p.Envelope.Data, &k) == nil && k.Reason == wire.KickReasonReplaced {
				c.mu.Lock()
				c.stop = ErrReplaced
				c.mu.Unlock()
			}
		case p.Command == wire.CmdEvent:
			if seq, ok := mailboxSeq(p.Envelope.Data); ok {
				c.mu.Lock()
				c.liveEvents[seq] = struct{}{}
				c.mu.Unlock()
			}
		}
		c.emit(Event{Kind: EventPush, Push: p})
	}
}

// release delivers the messages held during catch-up, then lets live ones
// through.
func (c *Client) release() {
	for {
		c.mu.Lock()
		batch := c.held
		c.held = nil
		if len(batch) == 0 {
			c.holding = false
		}
		c.mu.Unlock()
		if len(batch) == 0 {
			return
		}
		for _, m := range batch {
			c.offer(m, false)
		}
	}
}

// offer delivers m unless the caller already has it, or sent it and waits for
// its SEND_ACK (the replay after a reconnect holds the caller's own sends).
func (c *Client) offer(m wire.Message, replayed bool) {
	c.mu.Lock()
	fresh := c.topic(m.Topic).add(m.Seq)
	if _, own := c.sending[m.ClientMsgID]; own && m.From == c.me.UserID {
		fresh = false
	}
	c.mu.Unlock()
	if fresh {
		c.emit(Event{Kind: EventMessage, Message: &m, Replayed: replayed})
	}
}

// emit hands e to Events unless the client is closing.
func (c *Client) emit(e Event) {
	select {
	case c.events <- e:
	case <-c.ctx.Done():
	}
}

// topic is the seen state of topic; c.mu must be held.
func (c *Client) topic(topic string) *topicSeen {
	t := c.seen[topic]
	if t == nil {
		t = &topicSeen{}
		c.seen[topic] = t
	}
	return t
}
