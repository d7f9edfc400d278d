package server

import (
	"context"

	"github.com/panjf2000/gnet/v2"

	"github.com/imdhq/imd/adapters/protocol/session"
)

// gnetWriter is what writes a connection's frames: the gnet connection itself when frames
// travel in plaintext, the TLS bridge when the server terminates TLS.
type gnetWriter interface {
	AsyncWritev(bufs [][]byte, cb gnet.AsyncCallback) error
	Wake(cb gnet.AsyncCallback) error
	Close() error
	EventLoop() gnet.EventLoop
}

// link is a session.Link over gnet: writes and wakes are queued for the connection's event
// loop, which runs the callbacks.
type link struct{ w gnetWriter }

func (l link) Write(bufs [][]byte, done func(unsent int, err error)) error {
	return l.w.AsyncWritev(bufs, func(gc gnet.Conn, err error) error {
		// Only after a successful write: on error the connection may already be released.
		unsent := 0
		if err == nil {
			unsent = gc.OutboundBuffered()
		}
		done(unsent, err)
		return nil
	})
}

// Wake runs the traffic handler, which calls Observe.
func (l link) Wake(done func()) error {
	return l.w.Wake(func(gnet.Conn, error) error { done(); return nil })
}

func (l link) Close() error { return l.w.Close() }

func (l link) Loop() session.Loop {
	if el := l.w.EventLoop(); el != nil {
		return loop{el}
	}
	return nil
}

// loop is a gnet event loop as the session's pacing sees it.
type loop struct{ el gnet.EventLoop }

func (l loop) Run(ctx context.Context, f func()) error {
	return l.el.Execute(ctx, gnet.RunnableFunc(func(context.Context) error { f(); return nil }))
}
