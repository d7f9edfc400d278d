package tlstest

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
)

// Record-layer limits of RFC 8446 §5.1/§5.2 and RFC 5246 §6.2.3: a ciphertext record carries
// at most 2^14 bytes of plaintext plus 2048 bytes of expansion.
const (
	recordHeaderLen = 5
	maxRecordLen    = 1<<14 + 2048
)

// RecordLayer checks that the bytes written to it, in order, are a sequence of TLS records:
// a known content type, a 3.x version and a length within the limit. It is the check that
// nothing reaches a TLS connection in clear text: a frame, an HTTP answer or the tail of
// another connection's record fails it at once.
type RecordLayer struct {
	mu      sync.Mutex
	pending []byte // the current record's bytes, header first
	records int
	bytes   int64
	err     error
}

// Write never fails, so it can sit in an io.MultiWriter or io.Copy; Err reports.
func (r *RecordLayer) Write(b []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return len(b), nil
	}
	r.pending = append(r.pending, b...)
	for len(r.pending) >= recordHeaderLen {
		typ, major, minor := r.pending[0], r.pending[1], r.pending[2]
		n := int(r.pending[3])<<8 | int(r.pending[4])
		switch {
		case typ < 20 || typ > 23: // change_cipher_spec, alert, handshake, application_data
			r.err = fmt.Errorf("byte %d: content type %d is not a TLS record (% x)", r.bytes, typ, head(r.pending))
		case major != 3 || minor < 1 || minor > 4:
			r.err = fmt.Errorf("byte %d: record version %d.%d (% x)", r.bytes, major, minor, head(r.pending))
		case n > maxRecordLen:
			r.err = fmt.Errorf("byte %d: record length %d > %d", r.bytes, n, maxRecordLen)
		}
		if r.err != nil {
			return len(b), nil
		}
		if len(r.pending) < recordHeaderLen+n {
			break
		}
		r.pending = r.pending[recordHeaderLen+n:]
		r.bytes += int64(recordHeaderLen + n)
		r.records++
	}
	r.pending = append([]byte(nil), r.pending...) // keep only the incomplete record
	return len(b), nil
}

func head(b []byte) []byte { return b[:min(len(b), 16)] }

// Records is how many whole records went through.
func (r *RecordLayer) Records() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.records
}

// Err is the first violation, nil while every byte so far belongs to a record. A record
// still incomplete is not an error: the stream may simply have been cut there.
func (r *RecordLayer) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// Proxy is a TCP relay between test clients and a TLS server that runs every byte the
// server sends through a RecordLayer of its connection.
type Proxy struct {
	ln       net.Listener
	upstream string
	prefix   func(i int) []byte

	mu     sync.Mutex
	layers []*RecordLayer
	conns  []net.Conn
	wg     sync.WaitGroup
}

// NewProxy relays to upstream until the test ends, then fails the test if any server byte
// was not part of a TLS record. prefix, when set, gives what the proxy sends upstream before
// the client's bytes on its i-th connection (from 0): a PROXY header for a client that cannot
// send one itself.
func NewProxy(tb testing.TB, upstream string, prefix func(i int) []byte) *Proxy {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	p := &Proxy{ln: ln, upstream: upstream, prefix: prefix}
	p.wg.Add(1)
	go p.serve()
	tb.Cleanup(func() {
		_ = ln.Close()
		p.mu.Lock()
		for _, c := range p.conns {
			_ = c.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
		if err := p.Err(); err != nil {
			tb.Errorf("server sent bytes outside TLS records: %v", err)
		}
	})
	return p
}

// Addr is where clients connect.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Connections is how many client connections were relayed.
func (p *Proxy) Connections() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.layers)
}

// Err is the first record-layer violation of any connection.
func (p *Proxy) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var errs []error
	for i, l := range p.layers {
		if err := l.Err(); err != nil {
			errs = append(errs, fmt.Errorf("connection %d: %w", i, err))
		}
	}
	return errors.Join(errs...)
}

func (p *Proxy) serve() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", p.upstream)
		if err != nil {
			_ = client.Close()
			continue
		}
		layer := &RecordLayer{}
		p.mu.Lock()
		i := len(p.layers)
		p.layers = append(p.layers, layer)
		p.conns = append(p.conns, client, server)
		p.mu.Unlock()
		if p.prefix != nil {
			if _, err := server.Write(p.prefix(i)); err != nil {
				_, _ = client.Close(), server.Close()
				continue
			}
		}
		var pair sync.WaitGroup
		pair.Add(2)
		p.wg.Add(2)
		go p.relay(server, client, nil, &pair)
		go p.relay(client, server, layer, &pair)
		go func() { // both directions ended: free the descriptors now, not at the test's end
			pair.Wait()
			_, _ = client.Close(), server.Close()
		}()
	}
}

// relay copies from src to dst (through layer when set) and half-closes dst at the end, so
// each side sees the other's close.
func (p *Proxy) relay(dst, src net.Conn, layer *RecordLayer, pair *sync.WaitGroup) {
	defer p.wg.Done()
	defer pair.Done()
	var w io.Writer = dst
	if layer != nil {
		w = io.MultiWriter(layer, dst)
	}
	_, _ = io.Copy(w, src)
	if tc, ok := dst.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	} else {
		_ = dst.Close()
	}
}
