package websocket

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	cws "github.com/coder/websocket"

	"github.com/imdhq/imd/adapters/protocol/session"
	"github.com/imdhq/imd/clients/go/frame"
)

// errLinkClosed refuses writes after the link closed.
var errLinkClosed = errors.New("websocket: connection closed")

// link is a session.Link over one WebSocket connection: writes queue here and the
// connection's writer goroutine sends them, one frame per binary message, so nobody who
// writes (a deliver worker, the task pool) waits for a slow browser.
type link struct {
	ws           *cws.Conn
	writeTimeout time.Duration
	// maxUnsent closes the connection when this much waits unsent: responses are never
	// dropped, so a client asking without reading would otherwise grow the server's memory.
	maxUnsent int

	mu      sync.Mutex
	queue   []write
	unsent  int
	closing bool
	// closeCode and closeReason are sent in the close frame once the queue is drained.
	closeCode   cws.StatusCode
	closeReason string
	signal      chan struct{} // cap 1: the writer has something to do

	scratch []byte // the writer's: a push frame put together from its pieces
}

// write is one Write (bufs) or Wake (bufs nil) waiting for the writer.
type write struct {
	bufs [][]byte
	size int
	done func(unsent int, err error)
	wake func()
}

func newLink(ws *cws.Conn, writeTimeout time.Duration, maxUnsent int) *link {
	return &link{ws: ws, writeTimeout: writeTimeout, maxUnsent: maxUnsent, signal: make(chan struct{}, 1),
		closeCode: cws.StatusNormalClosure}
}

func (l *link) Write(bufs [][]byte, done func(unsent int, err error)) error {
	size := 0
	for _, b := range bufs {
		size += len(b)
	}
	l.mu.Lock()
	if l.closing {
		l.mu.Unlock()
		return errLinkClosed
	}
	l.queue = append(l.queue, write{bufs: bufs, size: size, done: done})
	l.unsent += size
	over := l.unsent > l.maxUnsent
	l.mu.Unlock()
	if over {
		l.closeWith(cws.StatusPolicyViolation, "too much unread")
	}
	l.notify()
	return nil
}

func (l *link) Wake(done func()) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closing {
		return errLinkClosed
	}
	l.queue = append(l.queue, write{wake: done})
	l.notify()
	return nil
}

// Close closes the connection once what was queued before it is written (a KICK's frame).
func (l *link) Close() error {
	l.closeWith(cws.StatusNormalClosure, "")
	return nil
}

// closeWith is Close with the close frame's code and reason; the first close decides them.
func (l *link) closeWith(code cws.StatusCode, reason string) {
	l.mu.Lock()
	if !l.closing {
		l.closing, l.closeCode, l.closeReason = true, code, reason
	}
	l.mu.Unlock()
	l.notify()
}

// Loop is nil: the link has its own writer, nothing to pace.
func (l *link) Loop() session.Loop { return nil }

func (l *link) notify() {
	select {
	case l.signal <- struct{}{}:
	default:
	}
}

// run writes what is queued until the link is closed and drained or ctx ends, then closes the
// connection. A write that does not finish within writeTimeout (a browser that stopped
// reading) fails the connection.
func (l *link) run(ctx context.Context) {
	var failed error
	for {
		l.mu.Lock()
		batch := l.queue
		l.queue = nil
		closing := l.closing
		l.mu.Unlock()
		for _, w := range batch {
			if w.wake != nil {
				w.wake()
				continue
			}
			if failed == nil {
				failed = l.send(ctx, w.bufs)
			}
			l.mu.Lock()
			l.unsent -= w.size
			unsent := l.unsent
			l.mu.Unlock()
			w.done(unsent, failed)
		}
		if failed != nil {
			l.abort()
			return
		}
		if closing && len(batch) == 0 {
			l.mu.Lock()
			code, reason := l.closeCode, l.closeReason
			l.mu.Unlock()
			_ = l.ws.Close(code, reason)
			return
		}
		if len(batch) > 0 {
			continue
		}
		select {
		case <-l.signal:
		case <-ctx.Done():
			l.abort()
			return
		}
	}
}

// abort fails what is still queued and refuses more.
func (l *link) abort() {
	l.mu.Lock()
	l.closing = true
	rest := l.queue
	l.queue = nil
	l.mu.Unlock()
	for _, w := range rest {
		if w.wake != nil {
			w.wake()
		} else {
			w.done(0, errLinkClosed)
		}
	}
	_ = l.ws.CloseNow()
}

// send writes bufs, whole frames or header and body pieces of them, one message per frame.
func (l *link) send(ctx context.Context, bufs [][]byte) error {
	ctx, cancel := context.WithTimeout(ctx, l.writeTimeout)
	defer cancel()
	for i := 0; i < len(bufs); {
		h, err := frame.ParseHeader(bufs[i])
		if err != nil {
			return fmt.Errorf("websocket: write: %w", err)
		}
		msg := bufs[i]
		i++
		if size := frame.HeaderLen + int(h.BodyLen); len(msg) < size {
			// A push: its header, then its body shared with other connections.
			l.scratch = append(l.scratch[:0], msg...)
			for ; len(l.scratch) < size && i < len(bufs); i++ {
				l.scratch = append(l.scratch, bufs[i]...)
			}
			msg = l.scratch
		}
		if err := l.ws.Write(ctx, cws.MessageBinary, msg); err != nil {
			return fmt.Errorf("websocket: write: %w", err)
		}
	}
	return nil
}
