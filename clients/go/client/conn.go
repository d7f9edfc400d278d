package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	// The upstream of encoding/json/v2: it decodes a push in one pass, about three times as
	// fast as encoding/json, which matters to a load generator reading 100,000s a second.
	jsonv2 "github.com/go-json-experiment/json"

	"github.com/imdhq/imd/clients/go/frame"
	"github.com/imdhq/imd/clients/go/wire"
)

var (
	// ErrClosed is the error of a Conn closed by Close.
	ErrClosed = errors.New("client: connection closed")
	// ErrProtocol marks a server frame that breaks PROTOCOL.md.
	ErrProtocol = errors.New("client: protocol violation")
)

// CodeError is the error of a typed helper whose response has code ≠ 0.
type CodeError struct {
	Code int
	Msg  string
}

func (e *CodeError) Error() string { return fmt.Sprintf("imd: code %d: %s", e.Code, e.Msg) }

// Push is a server frame that answers no request: MESSAGE, KICK, EVENT, a
// READ_MESSAGE from another device, or a response that came after its request
// gave up.
type Push struct {
	Command    uint16
	SequenceID uint32
	// Envelope of a MESSAGE has no Data: the body is decoded once, into Message.
	Envelope wire.Envelope
	Message  *wire.Message // the decoded data of a successful MESSAGE, else nil
}

// readBufferSize covers typical frames; larger ones get their own buffer, so
// tens of thousands of idle connections stay cheap.
const readBufferSize = 4096

// maxPendingAcks bounds the PUSH_ACK frames gathered before they are written
// (in bytes): the reader writes them when it has no whole frame left to read,
// so a burst of pushes costs one write, not one per MESSAGE.
const maxPendingAcks = 16 << 10

// keepWriteBuffer bounds the encode buffer a Conn keeps between writes.
const keepWriteBuffer = 2 * (frame.HeaderLen + frame.MaxBody)

var emptyObject = []byte("{}")

// Conn is one client connection, safe for concurrent use: requests are numbered by
// sequence_id and request_id, and a reader goroutine matches each response to
// its request by both. Frames that answer no pending request are pushes;
// MESSAGE pushes are acknowledged with PUSH_ACK automatically. Callers must
// keep draining Pushes: while its channel is full, no response is read either.
type Conn struct {
	nc             net.Conn
	compressMin    int
	requestTimeout time.Duration

	writeMu  sync.Mutex
	writeBuf []byte

	// acks are PUSH_ACK frames not written yet; the reader goroutine's own.
	acks []byte

	requestID atomic.Uint64

	mu      sync.Mutex
	pending map[uint32]*call
	lastSeq uint32
	err     error

	pushes  chan Push
	closing chan struct{} // closed on the first failure or Close
	closed  chan struct{} // closed once the reader has stopped
}

// call is one request waiting for its response frames.
type call struct {
	cmd       uint16
	stream    bool
	requestID uint64
	envs      []wire.Envelope
	err       error
	done      chan struct{} // closed when envs or err is final
}

func newConn(nc net.Conn, o Options) *Conn {
	c := &Conn{
		nc:             nc,
		compressMin:    o.CompressMin,
		requestTimeout: o.RequestTimeout,
		pending:        make(map[uint32]*call),
		pushes:         make(chan Push, o.PushBuffer),
		closing:        make(chan struct{}),
		closed:         make(chan struct{}),
	}
	go c.readLoop(bufio.NewReaderSize(nc, readBufferSize))
	return c
}

// Pushes delivers pushes in arrival order and is closed when the connection
// is. The reader goroutine blocks while the channel is full, which stalls
// every response on this connection too: a caller must keep draining it.
func (c *Conn) Pushes() <-chan Push { return c.pushes }

// Closed is closed once the connection is down and its reader has stopped.
func (c *Conn) Closed() <-chan struct{} { return c.closed }

// Err is why the connection closed: ErrClosed after Close, an error wrapping
// io.EOF when the server closed it, or the read, write or protocol error. It
// is nil while the connection is open.
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Close closes the connection, fails pending requests with ErrClosed and waits
// for the reader to stop.
func (c *Conn) Close() error {
	err := c.fail(ErrClosed)
	<-c.closed
	return err
}

// WriteRaw writes b as is, so tests can send malformed frames. A failed write
// closes the connection.
func (c *Conn) WriteRaw(b []byte) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	return c.writeLocked(b, time.Now().Add(c.requestTimeout))
}

// Request sends cmd with body and returns its one response envelope, whatever
// its code. body is marshalled to JSON unless it is []byte or
// json.RawMessage, which are sent as is; nil sends {}. Use RequestStream for
// SYNC_INBOX and SYNC_MESSAGES.
func (c *Conn) Request(ctx context.Context, cmd uint16, body any) (wire.Envelope, error) {
	if wire.IsStream(cmd) {
		return wire.Envelope{}, fmt.Errorf("client: command %d answers with pages: use RequestStream", cmd)
	}
	envs, err := c.roundTrip(ctx, cmd, body, false)
	if err != nil {
		return wire.Envelope{}, err
	}
	return envs[0], nil
}

// RequestStream sends a SYNC_INBOX or SYNC_MESSAGES request and returns its
// pages followed by the FINISH envelope, which is always last. An error
// envelope on the FINISH command ends the stream like a success does.
func (c *Conn) RequestStream(ctx context.Context, cmd uint16, body any) ([]wire.Envelope, error) {
	if !wire.IsStream(cmd) {
		return nil, fmt.Errorf("client: command %d has no pages: use Request", cmd)
	}
	return c.roundTrip(ctx, cmd, body, true)
}

func (c *Conn) roundTrip(ctx context.Context, cmd uint16, body any, stream bool) ([]wire.Envelope, error) {
	payload, err := marshalBody(body)
	if err != nil {
		return nil, fmt.Errorf("client: command %d: %w", cmd, err)
	}
	ctx, cancel := context.WithTimeout(ctx, c.requestTimeout)
	defer cancel()

	cl := &call{cmd: cmd, stream: stream, requestID: c.requestID.Add(1), done: make(chan struct{})}
	seq, err := c.register(cl)
	if err != nil {
		return nil, err
	}
	deadline, _ := ctx.Deadline()
	if err := c.writeFrame(cmd, cl.requestID, seq, payload, deadline); err != nil {
		c.forget(seq, cl)
		return nil, err
	}
	select {
	case <-cl.done:
	case <-ctx.Done():
		if c.forget(seq, cl) {
			return nil, fmt.Errorf("client: command %d: %w", cmd, ctx.Err())
		}
		<-cl.done // the reader finished it meanwhile
	}
	if cl.err != nil {
		return nil, cl.err
	}
	return cl.envs, nil
}

func marshalBody(body any) ([]byte, error) {
	switch b := body.(type) {
	case nil:
		return emptyObject, nil
	case []byte:
		return b, nil
	case json.RawMessage:
		return b, nil
	default:
		return json.Marshal(body)
	}
}

// register gives cl a sequence_id no pending request holds.
func (c *Conn) register(cl *call) (uint32, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return 0, c.err
	}
	for {
		c.lastSeq++
		if _, taken := c.pending[c.lastSeq]; !taken {
			c.pending[c.lastSeq] = cl
			return c.lastSeq, nil
		}
	}
}

// forget drops a request that gave up. It reports false when the reader or a
// failure already finished it.
func (c *Conn) forget(seq uint32, cl *call) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pending[seq] != cl {
		return false
	}
	delete(c.pending, seq)
	return true
}

func (c *Conn) writeFrame(cmd uint16, requestID uint64, seq uint32, body []byte, deadline time.Time) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	buf, err := frame.Append(c.writeBuf[:0], cmd, requestID, seq, body, c.compressMin)
	if err != nil {
		return fmt.Errorf("client: encode command %d: %w", cmd, err)
	}
	if cap(buf) <= keepWriteBuffer {
		c.writeBuf = buf
	}
	return c.writeLocked(buf, deadline)
}

// writeLocked writes b under writeMu. Any failure closes the connection: a
// partly written frame leaves the stream unusable.
func (c *Conn) writeLocked(b []byte, deadline time.Time) error {
	if err := c.nc.SetWriteDeadline(deadline); err != nil {
		return c.failed(fmt.Errorf("client: set write deadline: %w", err))
	}
	if _, err := c.nc.Write(b); err != nil {
		return c.failed(fmt.Errorf("client: write: %w", err))
	}
	return nil
}

// failed closes the connection with err and returns the connection's error,
// which is err unless an earlier failure or Close came first.
func (c *Conn) failed(err error) error {
	c.fail(err)
	return c.Err()
}

// fail records the first failure, fails every pending request with it and
// closes the socket, which stops the reader. It returns the socket's Close
// error the first time and nil after.
func (c *Conn) fail(err error) error {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return nil
	}
	c.err = err
	for seq, cl := range c.pending {
		cl.err = err
		close(cl.done)
		delete(c.pending, seq)
	}
	close(c.closing)
	c.mu.Unlock()
	return c.nc.Close()
}

func (c *Conn) readLoop(r *bufio.Reader) {
	defer close(c.closed)
	defer close(c.pushes)
	for {
		f, err := readFrame(r)
		if err != nil {
			c.fail(fmt.Errorf("client: read: %w", err))
			return
		}
		if err := c.dispatch(f); err != nil {
			c.fail(err)
			return
		}
		if len(c.acks) >= maxPendingAcks || !frameBuffered(r) {
			if err := c.flushAcks(); err != nil {
				return
			}
		}
	}
}

// frameBuffered reports whether r holds a whole frame, so reading it cannot
// block on the network.
func frameBuffered(r *bufio.Reader) bool {
	if r.Buffered() < frame.HeaderLen {
		return false
	}
	head, err := r.Peek(frame.HeaderLen)
	if err != nil {
		return false
	}
	h, err := frame.ParseHeader(head)
	return err == nil && frame.HeaderLen+int(h.BodyLen) <= r.Buffered()
}

// flushAcks writes the gathered PUSH_ACK frames; a failure closes the
// connection.
func (c *Conn) flushAcks() error {
	if len(c.acks) == 0 {
		return nil
	}
	c.writeMu.Lock()
	err := c.writeLocked(c.acks, time.Now().Add(c.requestTimeout))
	c.writeMu.Unlock()
	c.acks = c.acks[:0]
	return err
}

// messageEnvelope is the envelope of a MESSAGE push with its data decoded in
// the same pass.
type messageEnvelope struct {
	Code      int           `json:"code"`
	Msg       string        `json:"msg"`
	RequestID string        `json:"request_id"`
	Data      *wire.Message `json:"data"`
}

// readFrame reads one frame. Frames that fit r's buffer are decoded in place;
// larger ones are read into a buffer of their own.
func readFrame(r *bufio.Reader) (frame.Frame, error) {
	head, err := r.Peek(frame.HeaderLen)
	if err != nil {
		return frame.Frame{}, eofInFrame(err, len(head))
	}
	h, err := frame.ParseHeader(head)
	if err != nil {
		return frame.Frame{}, err
	}
	size := frame.HeaderLen + int(h.BodyLen)
	if size > r.Size() {
		buf := make([]byte, size)
		if _, err := io.ReadFull(r, buf); err != nil {
			return frame.Frame{}, eofInFrame(err, 1)
		}
		f, _, err := frame.Decode(buf)
		return f, err
	}
	buf, err := r.Peek(size)
	if err != nil {
		return frame.Frame{}, eofInFrame(err, len(buf))
	}
	f, n, err := frame.Decode(buf)
	if err != nil {
		return frame.Frame{}, err
	}
	_, err = r.Discard(n)
	return f, err
}

// eofInFrame turns io.EOF after part of a frame into io.ErrUnexpectedEOF, so
// only a close between frames reads as a clean io.EOF.
func eofInFrame(err error, got int) error {
	if errors.Is(err, io.EOF) && got > 0 {
		return io.ErrUnexpectedEOF
	}
	return err
}

// dispatch hands a frame to the request it answers or delivers it as a push.
// A returned error is fatal.
func (c *Conn) dispatch(f frame.Frame) error {
	if f.Command == wire.CmdMessage {
		return c.dispatchMessage(f)
	}
	var env wire.Envelope
	if err := jsonv2.Unmarshal(f.Body, &env); err != nil {
		return fmt.Errorf("%w: command %d sequence_id %d: body is not an envelope: %w", ErrProtocol, f.Command, f.SequenceID, err)
	}
	if c.complete(f, env) {
		return nil
	}
	return c.deliver(Push{Command: f.Command, SequenceID: f.SequenceID, Envelope: env})
}

// dispatchMessage queues a MESSAGE push and its PUSH_ACK. The ack goes out
// before the push can wait for the caller: a slow consumer must not look like
// a lost push to the server.
func (c *Conn) dispatchMessage(f frame.Frame) error {
	var me messageEnvelope
	if err := jsonv2.Unmarshal(f.Body, &me); err != nil {
		return fmt.Errorf("%w: MESSAGE sequence_id %d: bad envelope or message object: %w", ErrProtocol, f.SequenceID, err)
	}
	env := wire.Envelope{Code: me.Code, Msg: me.Msg, RequestID: me.RequestID}
	if c.complete(f, env) {
		return nil
	}
	acks, err := frame.Append(c.acks, wire.CmdPushAck, f.RequestID, f.SequenceID, emptyObject, 0)
	if err != nil {
		return fmt.Errorf("client: encode PUSH_ACK: %w", err)
	}
	c.acks = acks
	p := Push{Command: f.Command, SequenceID: f.SequenceID, Envelope: env}
	if me.Code == wire.CodeOK {
		if me.Data == nil {
			return fmt.Errorf("%w: MESSAGE sequence_id %d: no message object", ErrProtocol, f.SequenceID)
		}
		p.Message = me.Data
	}
	return c.deliver(p)
}

// deliver hands p to Pushes, writing the gathered acks first when it has to
// wait.
func (c *Conn) deliver(p Push) error {
	select {
	case c.pushes <- p:
		return nil
	default:
	}
	if err := c.flushAcks(); err != nil {
		return err
	}
	select {
	case c.pushes <- p:
	case <-c.closing:
	}
	return nil
}

// complete adds f to the request it answers and reports whether there was
// one. A frame answers a request when both sequence_id and request_id match;
// then its command must be the page or the final command of that request.
func (c *Conn) complete(f frame.Frame, env wire.Envelope) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	cl := c.pending[f.SequenceID]
	if cl == nil || cl.requestID != f.RequestID {
		return false
	}
	switch {
	case env.RequestID != strconv.FormatUint(f.RequestID, 10):
		cl.err = fmt.Errorf("%w: command %d: envelope request_id %q, frame request_id %d", ErrProtocol, cl.cmd, env.RequestID, f.RequestID)
	case cl.stream && f.Command == cl.cmd:
		cl.envs = append(cl.envs, env)
		return true
	case f.Command == wire.ResponseCommand(cl.cmd):
		cl.envs = append(cl.envs, env)
	default:
		cl.err = fmt.Errorf("%w: command %d answered with command %d", ErrProtocol, cl.cmd, f.Command)
	}
	delete(c.pending, f.SequenceID)
	close(cl.done)
	return true
}
