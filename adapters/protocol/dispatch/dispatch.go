package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/imdhq/imd/adapters/protocol/session"
	"github.com/imdhq/imd/adapters/protocol/taskpool"
	"github.com/imdhq/imd/clients/go/frame"
	"github.com/imdhq/imd/clients/go/wire"
	"github.com/imdhq/imd/core/domain/apperr"
)

// handler serves one command in the task pool. It returns the data of the final response (the
// ResponseCommand frame) or the error that response reports; a streaming command writes its
// pages itself before returning.
type handler func(ctx context.Context, r *request) (any, error)

// request is one client frame on its way through the server, with what its log line needs.
type request struct {
	conn     *Client
	frame    frame.Frame
	identity session.Identity // zero before AUTH
	traceID  string
	started  time.Time
	// holdsPushes: AUTH held the connection's pushes (session.Conn.HoldPushes); the answer
	// releases them once queued.
	holdsPushes bool

	// Filled in by handlers for the log line (seed 003 §17).
	topic          string
	conversationID int64
	msgID          int64
}

func (d *Dispatcher) newRequest(c *Client, f frame.Frame) *request {
	r := &request{conn: c, frame: f, traceID: strconv.FormatUint(rand.Uint64(), 16), started: time.Now()}
	if c.load() == stateAuthenticated {
		r.identity = c.out.Identity()
	}
	return r
}

// Dispatch routes one frame of c on the goroutine that read it (an event loop, a WebSocket
// reader) and never blocks. HEARTBEAT and PUSH_ACK are served right here; so are refusals,
// rate limits included, which need no I/O. Everything else goes to the task pool.
func (d *Dispatcher) Dispatch(c *Client, f frame.Frame) {
	r := d.newRequest(c, f)
	switch {
	case f.Command == wire.CmdHeartbeat:
		d.respond(r, wire.HeartbeatResponse{ServerTime: d.deps.Clock.Now().UnixMilli()}, nil)
		return
	case f.Command == wire.CmdPushAck && c.load() == stateAuthenticated:
		// Transport-level only (seed 003 §14): it settles the push, nothing is stored or answered;
		// in P2P the sender learns of it (RECEIPT, issue 31).
		if m, ok := c.out.Ack(f.SequenceID); ok {
			d.delivered(c, m)
		}
		return
	case d.stopping.Load():
		d.respond(r, nil, apperr.New(apperr.Busy, "server is shutting down, reconnect"))
		return
	case f.Command == wire.CmdAuth:
		// Checked before the rate limit, so a repeated AUTH costs no budget. Only the
		// dispatching goroutine leaves stateConnected, so the state cannot change before the advance below.
		if c.load() != stateConnected {
			d.respond(r, nil, apperr.New(apperr.InvalidArgument, "already authenticated on this connection"))
			return
		}
	case c.load() != stateAuthenticated:
		d.respond(r, nil, apperr.New(apperr.Unauthenticated, "authenticate first"))
		return
	}
	if b := budgetOf(f.Command); b != budgetNone {
		if scope := d.limits.allow(c, b, r.started); scope != "" {
			d.deps.Metrics.Inc("tcp_rate_limited_total", scope, b.String())
			d.respond(r, nil, apperr.New(apperr.RateLimited, "rate limited, slow down"))
			return
		}
	}
	if f.Command == wire.CmdAuth && !c.advance(stateConnected, stateAuthenticating) {
		d.respond(r, nil, apperr.New(apperr.InvalidArgument, "already authenticated on this connection"))
		return
	}
	h, ok := d.handlers[f.Command]
	if !ok {
		d.respond(r, nil, apperr.New(apperr.InvalidArgument, "unknown command "+strconv.Itoa(int(f.Command))))
		return
	}
	if err := d.pool.Submit(func() { d.run(h, r) }); err != nil {
		if f.Command == wire.CmdAuth {
			c.advance(stateAuthenticating, stateConnected)
		}
		msg := "server busy, retry"
		if errors.Is(err, taskpool.ErrClosed) {
			msg = "server is shutting down, reconnect"
		}
		d.respond(r, nil, apperr.Wrap(apperr.Busy, msg, err))
	}
}

// run executes a handler in the task pool under the request deadline, which also ends when
// the connection closes.
func (d *Dispatcher) run(h handler, r *request) {
	ctx, cancel := context.WithTimeout(r.conn.ctx, d.cfg.RequestTimeout)
	defer cancel()
	data, err := call(ctx, h, r)
	d.respond(r, data, err)
}

// call runs h, turning a panic into an internal error so one bad request neither kills the
// worker nor leaves the client without an answer.
func call(ctx context.Context, h handler, r *request) (data any, err error) {
	defer func() {
		if p := recover(); p != nil {
			data, err = nil, apperr.Wrap(apperr.Internal, "internal error", fmt.Errorf("panic: %v", p))
		}
	}()
	return h(ctx, r)
}

// shrinkable data can give up items to fit one frame (a GET_HISTORY page may return fewer
// messages than asked; the client pages on from the last one it got).
type shrinkable interface {
	shrink() (smaller any, ok bool)
}

// respond writes the final response of r: data on success, else the error's contract code
// and client-facing message, with the command that ends r (PROTOCOL §2).
func (d *Dispatcher) respond(r *request, data any, err error) {
	f, err := d.encodeResponse(r, data, err)
	if r.holdsPushes {
		defer r.conn.out.ReleasePushes() // the pushes that found the device bound go after the answer
	}
	if f != nil {
		if sendErr := r.conn.out.Send(f); sendErr != nil {
			d.logRequest(r, apperr.CodeOf(err), errors.Join(err, sendErr))
			return
		}
		if r.frame.Command == wire.CmdSendMessage {
			d.deps.Metrics.Observe("send_ack_latency", time.Since(r.started).Seconds())
		}
	}
	d.logRequest(r, apperr.CodeOf(err), err)
}

// encodeResponse returns the response frame and the error it reports (nil on success).
func (d *Dispatcher) encodeResponse(r *request, data any, err error) ([]byte, error) {
	cmd := wire.ResponseCommand(r.frame.Command)
	id, seq := r.frame.RequestID, r.frame.SequenceID
	for err == nil {
		body, mErr := wire.OK(id, data)
		if mErr != nil {
			err = apperr.Wrap(apperr.Internal, "internal error", mErr)
			break
		}
		f, fErr := frame.Append(nil, cmd, id, seq, body, d.cfg.CompressMin)
		if fErr == nil {
			return f, nil
		}
		if sh, ok := data.(shrinkable); ok && errors.Is(fErr, frame.ErrTooLarge) {
			if data, ok = sh.shrink(); ok {
				continue
			}
		}
		err = apperr.Wrap(apperr.Internal, "response does not fit in a frame", fErr)
	}
	body := wire.Err(id, int(apperr.CodeOf(err)), apperr.MessageOf(err))
	f, fErr := frame.Append(nil, cmd, id, seq, body, d.cfg.CompressMin)
	if fErr != nil {
		return nil, errors.Join(err, fErr)
	}
	return f, err
}

// logRequest writes the request's log line with the fields of seed 003 §17. Successes and
// client mistakes are debug noise at volume; server-side failures carry their cause.
func (d *Dispatcher) logRequest(r *request, code apperr.Code, err error) {
	level := slog.LevelDebug
	switch {
	case code == apperr.Internal:
		level = slog.LevelError
	case code == apperr.Busy:
		level = slog.LevelWarn
	}
	ctx := r.conn.ctx
	if !d.log.Enabled(ctx, level) {
		return
	}
	attrs := []slog.Attr{
		slog.String("trace_id", r.traceID),
		slog.Int64("user_id", r.identity.User),
		slog.Uint64("device_id", r.identity.Device),
		slog.String("real_ip", r.conn.realIP.String()),
		slog.Uint64("connection_id", r.conn.id),
		slog.Int("command", int(r.frame.Command)),
		slog.Int("code", int(code)),
		slog.Duration("elapsed", time.Since(r.started)),
	}
	if r.topic != "" {
		attrs = append(attrs, slog.String("topic", r.topic))
	}
	if r.conversationID != 0 {
		attrs = append(attrs, slog.Int64("conversation_id", r.conversationID))
	}
	if r.msgID != 0 {
		attrs = append(attrs, slog.Int64("msg_id", r.msgID))
	}
	if err != nil {
		attrs = append(attrs, slog.String("err", err.Error()))
	}
	d.log.LogAttrs(ctx, level, r.conn.transport+" request", attrs...)
}

// decodeBody reads a client body. Commands whose body is {} may send none at all.
func decodeBody(body []byte, v any) error {
	if len(body) == 0 {
		return nil
	}
	if err := json.Unmarshal(body, v); err != nil {
		return apperr.Wrap(apperr.InvalidArgument, "invalid JSON body", err)
	}
	return nil
}
