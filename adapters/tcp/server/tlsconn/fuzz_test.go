package tlsconn

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/protocol/tlstest"
)

// memClient is the client's socket in the fuzz target: its writes are fed to the server's
// handshake until capture, after which they are kept for the fuzzer to deliver in pieces;
// its reads take what the server wrote.
type memClient struct {
	net.Conn // nil: only the methods below are used
	server   *Conn
	from     chan []byte
	rest     []byte

	mu       sync.Mutex
	capture  bool
	captured []byte
}

func (m *memClient) Write(b []byte) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.capture {
		m.captured = append(m.captured, b...)
		return len(b), nil
	}
	m.server.Feed(b)
	return len(b), nil
}

func (m *memClient) Read(b []byte) (int, error) {
	if len(m.rest) == 0 {
		select {
		case m.rest = <-m.from:
		case <-time.After(5 * time.Second):
			return 0, io.ErrUnexpectedEOF
		}
	}
	n := copy(b, m.rest)
	m.rest = m.rest[n:]
	return n, nil
}

func (m *memClient) Close() error                     { return nil }
func (m *memClient) SetDeadline(time.Time) error      { return nil }
func (m *memClient) SetReadDeadline(time.Time) error  { return nil }
func (m *memClient) SetWriteDeadline(time.Time) error { return nil }

// handshaken returns a server Conn past its handshake with a client of version whose
// socket now captures what it writes.
func handshaken(t testing.TB, server *tls.Config, roots *x509.CertPool, version uint16) (*Conn, *tls.Conn, *memClient) {
	t.Helper()
	link := &fakeLink{toClient: make(chan []byte, 64)}
	conn := NewTerminator(server).Server(link)
	mc := &memClient{server: conn, from: link.toClient}
	hs := make(chan error, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	go func() { hs <- conn.Handshake(ctx) }()
	tc := tls.Client(mc, &tls.Config{ServerName: "im.test", RootCAs: roots, MinVersion: version, MaxVersion: version})
	if err := tc.HandshakeContext(ctx); err != nil {
		t.Fatalf("client handshake: %v", err)
	}
	if err := <-hs; err != nil {
		t.Fatalf("server handshake: %v", err)
	}
	mc.mu.Lock()
	mc.capture = true
	mc.mu.Unlock()
	return conn, tc, mc
}

// FuzzRead drives the event-loop side of the bridge after the handshake: valid records
// arriving split at any points, then garbage. Every plaintext byte of the valid records comes
// out once and in order, garbage is an error, and nothing panics or blocks.
func FuzzRead(f *testing.F) {
	f.Add(false, []byte("hello"), []byte{1, 2, 3}, []byte(nil))
	f.Add(true, bytes.Repeat([]byte("x"), 40000), []byte{5, 0, 200, 7}, []byte{0x17, 0x03, 0x03, 0x00, 0x05, 1, 2, 3, 4, 5})
	f.Add(false, []byte("frames"), []byte{0}, []byte("GET / HTTP/1.1\r\n"))
	f.Add(true, []byte("a"), []byte{255, 255}, []byte{0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x28})
	server, roots := tlstest.SelfSigned(f, "im.test")
	f.Fuzz(func(t *testing.T, tls12 bool, plain, splits, garbage []byte) {
		if len(plain) > 1<<17 {
			plain = plain[:1<<17]
		}
		version := uint16(tls.VersionTLS13)
		if tls12 {
			version = tls.VersionTLS12
		}
		conn, tc, mc := handshaken(t, server, roots, version)
		defer conn.Release()
		// Two writes: records of more than one size, as a client sends them.
		half := len(plain) / 2
		for _, part := range [][]byte{plain[:half], plain[half:]} {
			if len(part) > 0 {
				if _, err := tc.Write(part); err != nil {
					t.Fatalf("client write: %v", err)
				}
			}
		}
		mc.mu.Lock()
		stream := append(mc.captured, garbage...)
		mc.mu.Unlock()

		var got []byte
		var readErr error
		for i := 0; len(stream) > 0 && readErr == nil; i++ {
			n := len(stream)
			if len(splits) > 0 {
				n = min(n, 1+int(splits[i%len(splits)])*int(splits[i%len(splits)]))
			}
			got, readErr = conn.Read(got, stream[:n])
			stream = stream[n:]
		}
		if !bytes.HasPrefix(plain, got) && !bytes.HasPrefix(got, plain) {
			t.Fatalf("decrypted %d bytes that are not the %d sent", len(got), len(plain))
		}
		if len(got) < len(plain) {
			t.Fatalf("decrypted %d of %d bytes (err %v)", len(got), len(plain), readErr)
		}
		if len(got) > len(plain) {
			t.Fatalf("decrypted %d bytes, %d sent: garbage became plaintext", len(got), len(plain))
		}
		if len(garbage) == 0 && readErr != nil {
			t.Fatalf("valid records failed: %v", readErr)
		}
	})
}
