package frame

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzDecode checks that Decode never panics, never claims more bytes than it
// was given, and that whatever it accepts re-encodes to an equal frame. The
// seed corpus lives in testdata/fuzz/FuzzDecode.
func FuzzDecode(f *testing.F) {
	f.Fuzz(func(t *testing.T, buf []byte) {
		fr, n, err := Decode(buf)
		if n < 0 || n > len(buf) {
			t.Fatalf("n = %d for %d bytes", n, len(buf))
		}
		if err != nil {
			if n != 0 {
				t.Fatalf("n = %d with error %v", n, err)
			}
			return
		}
		if n != HeaderLen+int(fr.BodyLen) {
			t.Fatalf("n = %d, header says %d", n, HeaderLen+int(fr.BodyLen))
		}
		if len(fr.Body) > MaxInflated {
			t.Fatalf("body of %d bytes passed the inflate cap", len(fr.Body))
		}

		compressMin := 0
		if fr.Compressed() {
			compressMin = 1
		}
		again, err := Append(nil, fr.Command, fr.RequestID, fr.SequenceID, fr.Body, compressMin)
		if err != nil {
			// Another compressor may have packed a body our level cannot fit in MaxBody.
			if fr.Compressed() && errors.Is(err, ErrTooLarge) {
				return
			}
			t.Fatalf("re-encode: %v", err)
		}
		if !fr.Compressed() && !bytes.Equal(again, buf[:n]) {
			t.Fatalf("plain frame re-encoded differently:\n%x\n%x", again, buf[:n])
		}
		back, m, err := Decode(again)
		if err != nil || m != len(again) {
			t.Fatalf("decode re-encoded: n = %d of %d, err = %v", m, len(again), err)
		}
		if back.Command != fr.Command || back.RequestID != fr.RequestID || back.SequenceID != fr.SequenceID || !bytes.Equal(back.Body, fr.Body) {
			t.Fatalf("re-encoded frame differs: %+v vs %+v", back.Header, fr.Header)
		}
	})
}
