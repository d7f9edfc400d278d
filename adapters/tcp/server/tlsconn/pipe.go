package tlsconn

import (
	"net"
	"sync"
	"time"
)

// errWouldBlock is what the pipe's Read returns, once the handshake is over, when no
// ciphertext is buffered. crypto/tls keeps its input usable after a net.Error whose
// Temporary() is true (it only records other errors as fatal), so the next Read simply
// continues with the bytes the event loop hands in later.
var errWouldBlock net.Error = wouldBlock{}

type wouldBlock struct{}

func (wouldBlock) Error() string   { return "tlsconn: no ciphertext buffered" }
func (wouldBlock) Timeout() bool   { return true }
func (wouldBlock) Temporary() bool { return true }

// pipe is the net.Conn under a tls.Conn: ciphertext comes in from the event loop, ciphertext
// goes out to gnet.
//
// During the handshake Read blocks until the event loop feeds bytes (a would-block error
// there would poison the tls.Conn for good) and Write hands each flight straight to gnet.
// After it, Read never blocks and Write collects records in out, which Conn hands to gnet
// together with the write callback of the frame they carry.
type pipe struct {
	gc link

	mu        sync.Mutex
	in        []byte // ciphertext not read yet
	borrowed  bool   // in is the event loop's buffer, valid only during the current Read
	out       []byte // records written since the last take (after the handshake)
	handshook bool
	closed    bool

	fed  chan struct{} // wakes a blocked Read; capacity 1
	done chan struct{} // closed by Close
}

func newPipe(gc link) *pipe {
	return &pipe{gc: gc, fed: make(chan struct{}, 1), done: make(chan struct{})}
}

// feed appends ciphertext for a Read that may run on another goroutine (the handshake) and
// returns how many bytes wait for the handshake: none once it is over. Between the end of
// the handshake and the event loop's first Read, the client's first requests are fed here
// too, and a client that pipelines must not count as one that floods its handshake.
func (p *pipe) feed(b []byte) int {
	p.mu.Lock()
	p.in = append(p.in, b...)
	pending := len(p.in)
	if p.handshook {
		pending = 0
	}
	p.mu.Unlock()
	select {
	case p.fed <- struct{}{}:
	default:
	}
	return pending
}

// lend makes b readable without copying it, for Reads that all happen before unlend on the
// same goroutine (the event loop decrypting what it just received).
func (p *pipe) lend(b []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.in) == 0 {
		p.in, p.borrowed = b, true
		return
	}
	p.in = append(p.in, b...) // bytes fed during the handshake come first
}

// unlend ends a lend: any byte tls.Conn left unread is copied so the event loop may reuse its
// buffer. tls.Conn reads until it would block, so normally nothing is left.
func (p *pipe) unlend() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.borrowed && len(p.in) > 0 {
		p.in = append([]byte(nil), p.in...)
	}
	p.borrowed = false
}

func (p *pipe) Read(b []byte) (int, error) {
	for {
		p.mu.Lock()
		if len(p.in) > 0 {
			n := copy(b, p.in)
			p.in = p.in[n:]
			if len(p.in) == 0 {
				p.in, p.borrowed = nil, false // keep nothing for an idle connection
			}
			p.mu.Unlock()
			return n, nil
		}
		closed, handshook := p.closed, p.handshook
		p.mu.Unlock()
		switch {
		case closed:
			return 0, net.ErrClosed
		case handshook:
			return 0, errWouldBlock
		}
		select {
		case <-p.fed:
		case <-p.done:
		}
	}
}

func (p *pipe) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return 0, net.ErrClosed
	}
	if p.handshook {
		p.out = append(p.out, b...)
		return len(b), nil
	}
	// tls.Conn reuses b; gnet keeps the slice until its event loop writes it.
	if err := p.gc.AsyncWrite(append([]byte(nil), b...), nil); err != nil {
		return 0, err
	}
	return len(b), nil
}

// take returns the records written since the last take.
func (p *pipe) take() []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.out
	p.out = nil
	return out
}

// handshakeDone switches to the non-blocking mode of the established connection.
func (p *pipe) handshakeDone() {
	p.mu.Lock()
	p.handshook = true
	p.mu.Unlock()
}

// established reports whether the handshake is over.
func (p *pipe) established() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.handshook
}

// Close unblocks a pending Read; tls.Conn calls it when the handshake context ends.
func (p *pipe) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.closed {
		p.closed = true
		close(p.done)
	}
	return nil
}

func (p *pipe) LocalAddr() net.Addr  { return p.gc.LocalAddr() }
func (p *pipe) RemoteAddr() net.Addr { return p.gc.RemoteAddr() }

// Deadlines are never set: the handshake is bounded by its context, and after it nothing
// blocks.
func (p *pipe) SetDeadline(time.Time) error      { return nil }
func (p *pipe) SetReadDeadline(time.Time) error  { return nil }
func (p *pipe) SetWriteDeadline(time.Time) error { return nil }
