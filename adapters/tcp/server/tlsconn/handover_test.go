package tlsconn

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"testing"

	"github.com/imdhq/imd/adapters/protocol/tlstest"
)

// The event loop lends Read the bytes it just received in a buffer that gnet reuses for the
// next connection's read as soon as OnTraffic returns. Read must leave nothing of it behind:
// here every chunk is lent from one shared buffer that is scribbled over after each Read, and
// a stream of records (one per frame, then several frames in one record, as OpenSSL and Go
// clients write them) is cut at every byte offset in turn, so a record's header, its body and
// its tag each arrive split once. Every plaintext byte comes out once and in order.
func TestLentBytesAreNotKeptAcrossReads(t *testing.T) {
	server, roots := tlstest.SelfSigned(t, "im.test")
	for _, version := range []uint16{tls.VersionTLS13, tls.VersionTLS12} {
		t.Run(tls.VersionName(version), func(t *testing.T) {
			conn, tc, mc := handshaken(t, server, roots, version)
			defer conn.Release()
			var plain []byte
			for i := range 6 { // one record per frame
				frame := bytes.Repeat([]byte{byte('a' + i)}, 20+i*37)
				plain = append(plain, frame...)
				if _, err := tc.Write(frame); err != nil {
					t.Fatal(err)
				}
			}
			joined := bytes.Repeat([]byte("several frames, one record "), 9)
			plain = append(plain, joined...)
			if _, err := tc.Write(joined); err != nil {
				t.Fatal(err)
			}
			mc.mu.Lock()
			stream := mc.captured
			mc.mu.Unlock()

			shared := make([]byte, len(stream)) // gnet's per-loop read buffer
			var got []byte
			feed := func(chunk []byte) {
				lent := shared[:copy(shared, chunk)]
				var err error
				if got, err = conn.Read(got, lent); err != nil {
					t.Fatalf("read: %v", err)
				}
				for i := range lent { // the next connection's bytes land in it
					lent[i] = 0x17
				}
			}
			for cut := 1; cut < len(stream); cut++ {
				first := len(got)
				feed(stream[:cut])
				feed(stream[cut:])
				if want := plain; !bytes.Equal(got[first:], want) {
					t.Fatalf("cut at %d: decrypted %q…, want %q…", cut, head(got[first:]), head(want))
				}
				// The same records again, as the client's next ones: a fresh stream to cut.
				stream = reencrypt(t, tc, mc, plain, version)
				shared = make([]byte, len(stream))
			}
		})
	}
}

// reencrypt writes plain again as the client wrote it before (frames, then one joined
// record) and returns the new records.
func reencrypt(t *testing.T, tc *tls.Conn, mc *memClient, plain []byte, version uint16) []byte {
	t.Helper()
	mc.mu.Lock()
	mc.captured = nil
	mc.mu.Unlock()
	off := 0
	for i := range 6 {
		n := 20 + i*37
		if _, err := tc.Write(plain[off : off+n]); err != nil {
			t.Fatalf("%s: %v", tls.VersionName(version), err)
		}
		off += n
	}
	if _, err := tc.Write(plain[off:]); err != nil {
		t.Fatal(err)
	}
	mc.mu.Lock()
	defer mc.mu.Unlock()
	return mc.captured
}

func head(b []byte) string { return fmt.Sprintf("%.24s", b) }
