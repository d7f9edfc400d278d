package tlsconn

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/panjf2000/gnet/v2"

	"github.com/imdhq/imd/adapters/protocol/tlstest"
)

// fakeLink stands in for gnet.Conn: what the server writes goes to the client's socket in
// order, as gnet's event loop would write it.
type fakeLink struct {
	toClient chan []byte
	closed   atomic.Bool
}

func (l *fakeLink) AsyncWrite(b []byte, cb gnet.AsyncCallback) error {
	if l.closed.Load() {
		return net.ErrClosed
	}
	l.toClient <- b
	if cb != nil {
		return cb(nil, nil)
	}
	return nil
}

func (l *fakeLink) Wake(gnet.AsyncCallback) error { return nil }
func (l *fakeLink) EventLoop() gnet.EventLoop     { return nil }
func (l *fakeLink) Close() error                  { l.closed.Store(true); return nil }
func (l *fakeLink) LocalAddr() net.Addr           { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9000} }
func (l *fakeLink) RemoteAddr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 50000}
}

// bridge is one server Conn driven the way the gnet server drives it: a single "event loop"
// goroutine feeds (during the handshake) or decrypts (after it) every chunk the client sends,
// and the handshake runs on its own goroutine.
type bridge struct {
	conn   *Conn
	client net.Conn // the client's end of the socket (wrap it in tls.Client)
	plain  chan []byte
	failed chan error
	hsErr  chan error
}

// newBridge starts the server side; chunk splits the client's bytes into pieces of at most
// that size (0: as written) to exercise partial records.
func newBridge(t *testing.T, cfg *tls.Config, chunk int, handshakeTimeout time.Duration) *bridge {
	t.Helper()
	clientEnd, serverEnd := net.Pipe()
	link := &fakeLink{toClient: make(chan []byte, 1024)}
	b := &bridge{
		conn:   NewTerminator(cfg).Server(link),
		client: clientEnd,
		plain:  make(chan []byte, 1024),
		failed: make(chan error, 1),
		hsErr:  make(chan error, 1),
	}
	t.Cleanup(func() {
		b.conn.Release()
		_ = clientEnd.Close()
		_ = serverEnd.Close()
	})
	go func() { // the socket's send side, in gnet's order
		for out := range link.toClient {
			if _, err := serverEnd.Write(out); err != nil {
				return
			}
		}
	}()

	events := make(chan []byte, 1024) // nil = Wake after the handshake
	go func() {
		buf := make([]byte, 32<<10)
		for {
			n, err := serverEnd.Read(buf)
			if err != nil {
				close(events)
				return
			}
			for data := buf[:n]; len(data) > 0; {
				k := len(data)
				if chunk > 0 {
					k = min(k, chunk)
				}
				events <- append([]byte(nil), data[:k]...)
				data = data[k:]
			}
		}
	}()
	var established atomic.Bool
	go func() {
		ctx, cancel := context.WithTimeout(t.Context(), handshakeTimeout)
		defer cancel()
		err := b.conn.Handshake(ctx)
		b.hsErr <- err
		if err == nil {
			established.Store(true)
			events <- nil
		}
	}()
	go func() { // the event loop
		var pending []byte
		for data := range events {
			if !established.Load() {
				b.conn.Feed(data)
				continue
			}
			var err error
			if pending, err = b.conn.Read(pending[:0], data); err != nil {
				b.failed <- err
				return
			}
			if len(pending) > 0 {
				b.plain <- append([]byte(nil), pending...)
			}
		}
	}()
	return b
}

// readPlain collects what the server decrypted until it has n bytes.
func (b *bridge) readPlain(t *testing.T, n int) []byte {
	t.Helper()
	var got []byte
	for len(got) < n {
		select {
		case p := <-b.plain:
			got = append(got, p...)
		case err := <-b.failed:
			t.Fatalf("server read failed: %v", err)
		case <-time.After(5 * time.Second):
			t.Fatalf("server got %d of %d plaintext bytes", len(got), n)
		}
	}
	return got
}

func TestRoundTrip(t *testing.T) {
	tests := []struct {
		name    string
		version uint16
		chunk   int
	}{
		{"TLS 1.3", tls.VersionTLS13, 0},
		{"TLS 1.2", tls.VersionTLS12, 0},
		{"TLS 1.3 one byte at a time", tls.VersionTLS13, 1},
		{"TLS 1.2 in 7-byte pieces", tls.VersionTLS12, 7},
	}
	server, roots := tlstest.SelfSigned(t, "im.test")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBridge(t, server, tt.chunk, 5*time.Second)
			tc := tls.Client(b.client, &tls.Config{ServerName: "im.test", RootCAs: roots, MaxVersion: tt.version})
			// The client's first data follows its Finished at once, so part of it reaches the
			// server while the handshake goroutine still owns the pipe.
			if _, err := tc.Write([]byte("hello")); err != nil {
				t.Fatalf("client write: %v", err)
			}
			if err := <-b.hsErr; err != nil {
				t.Fatalf("handshake: %v", err)
			}
			if got := tc.ConnectionState().Version; got != tt.version {
				t.Fatalf("negotiated %x, want %x", got, tt.version)
			}
			if _, err := tc.Write([]byte(" world")); err != nil {
				t.Fatalf("client write: %v", err)
			}
			if got := b.readPlain(t, 11); string(got) != "hello world" {
				t.Fatalf("server read %q", got)
			}

			if err := b.conn.AsyncWritev([][]byte{[]byte("head|"), []byte("body")}, nil); err != nil {
				t.Fatalf("server write: %v", err)
			}
			got := make([]byte, 9)
			if _, err := io.ReadFull(tc, got); err != nil || string(got) != "head|body" {
				t.Fatalf("client read %q, %v", got, err)
			}
		})
	}
}

// Records from concurrent writers must reach the socket in the order tls.Conn numbered them,
// or the client fails to authenticate them.
func TestConcurrentWritesStayInOrder(t *testing.T) {
	server, roots := tlstest.SelfSigned(t, "im.test")
	b := newBridge(t, server, 0, 5*time.Second)
	tc := tls.Client(b.client, &tls.Config{ServerName: "im.test", RootCAs: roots})
	if err := tc.Handshake(); err != nil {
		t.Fatalf("client handshake: %v", err)
	}
	if err := <-b.hsErr; err != nil {
		t.Fatalf("handshake: %v", err)
	}
	const writers, each = 8, 200
	msg := func(w, i int) []byte { return fmt.Appendf(nil, "%02d:%04d;", w, i) }
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				if err := b.conn.AsyncWrite(msg(w, i), nil); err != nil {
					t.Errorf("write: %v", err)
					return
				}
			}
		})
	}
	got := make([]byte, writers*each*len(msg(0, 0)))
	if _, err := io.ReadFull(tc, got); err != nil {
		t.Fatalf("client read: %v", err)
	}
	wg.Wait()
	next := make([]int, writers) // each writer's messages arrive in its own order
	for rec := range bytes.SplitSeq(bytes.TrimSuffix(got, []byte(";")), []byte(";")) {
		var w, i int
		if _, err := fmt.Sscanf(string(rec), "%02d:%04d", &w, &i); err != nil || i != next[w] {
			t.Fatalf("record %q out of order (want writer %d at %d): %v", rec, w, next[w], err)
		}
		next[w]++
	}
}

func TestHandshakeTimesOut(t *testing.T) {
	server, _ := tlstest.SelfSigned(t, "im.test")
	b := newBridge(t, server, 0, 100*time.Millisecond)
	// Half a ClientHello, then silence.
	go func() { _, _ = b.client.Write([]byte{0x16, 0x03, 0x01, 0x02, 0x00, 0x01}) }()
	started := time.Now()
	select {
	case err := <-b.hsErr:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("handshake error %v, want DeadlineExceeded", err)
		}
		if d := time.Since(started); d > 2*time.Second {
			t.Fatalf("handshake gave up after %v", d)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("handshake still waiting after its timeout")
	}
}

func TestReleaseEndsHandshake(t *testing.T) {
	server, _ := tlstest.SelfSigned(t, "im.test")
	b := newBridge(t, server, 0, time.Minute)
	b.conn.Release()
	select {
	case err := <-b.hsErr:
		if err == nil {
			t.Fatal("handshake succeeded without a client")
		}
	case <-time.After(3 * time.Second):
		t.Fatal("Release did not end the waiting handshake")
	}
}

func TestWriteBeforeHandshake(t *testing.T) {
	server, _ := tlstest.SelfSigned(t, "im.test")
	c := NewTerminator(server).Server(&fakeLink{toClient: make(chan []byte, 1)})
	if err := c.AsyncWrite([]byte("x"), nil); !errors.Is(err, ErrHandshakeIncomplete) {
		t.Fatalf("write before handshake: %v, want ErrHandshakeIncomplete", err)
	}
}

func TestOldVersionsRefused(t *testing.T) {
	server, roots := tlstest.SelfSigned(t, "im.test")
	server.MinVersion = tls.VersionTLS10
	b := newBridge(t, server, 0, 5*time.Second)
	tc := tls.Client(b.client, &tls.Config{ServerName: "im.test", RootCAs: roots, MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS11})
	if err := tc.Handshake(); err == nil {
		t.Fatal("a TLS 1.1 client completed the handshake")
	}
	if err := <-b.hsErr; err == nil {
		t.Fatal("server accepted TLS 1.1")
	}
}

func TestBadRecordIsFatal(t *testing.T) {
	server, roots := tlstest.SelfSigned(t, "im.test")
	b := newBridge(t, server, 0, 5*time.Second)
	tc := tls.Client(b.client, &tls.Config{ServerName: "im.test", RootCAs: roots})
	if err := tc.Handshake(); err != nil {
		t.Fatalf("client handshake: %v", err)
	}
	if err := <-b.hsErr; err != nil {
		t.Fatalf("handshake: %v", err)
	}
	// An application-data record whose authentication tag cannot verify.
	if _, err := b.client.Write([]byte{0x17, 0x03, 0x03, 0x00, 0x20, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16,
		17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32}); err != nil {
		t.Fatalf("write: %v", err)
	}
	select {
	case err := <-b.failed:
		if err == nil {
			t.Fatal("nil error")
		}
	case <-time.After(3 * time.Second):
		t.Fatal("a forged record was not fatal")
	}
}

// Bytes fed after the handshake ended, before the event loop switched to Read, are the
// client's first requests: they do not count against the handshake's flood limit, and Read
// decrypts them first.
func TestFeedAfterHandshake(t *testing.T) {
	server, roots := tlstest.SelfSigned(t, "im.test")
	conn, tc, mc := handshaken(t, server, roots, tls.VersionTLS13)
	defer conn.Release()
	big := bytes.Repeat([]byte("r"), 100<<10)
	if _, err := tc.Write(big); err != nil {
		t.Fatal(err)
	}
	mc.mu.Lock()
	records := mc.captured
	mc.mu.Unlock()
	if pending := conn.Feed(records); pending != 0 {
		t.Fatalf("Feed after the handshake reports %d bytes waiting for it", pending)
	}
	got, err := conn.Read(nil, nil)
	if err != nil || !bytes.Equal(got, big) {
		t.Fatalf("read %d of %d bytes: %v", len(got), len(big), err)
	}
}
