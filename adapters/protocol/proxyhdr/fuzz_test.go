package proxyhdr

import (
	"errors"
	"testing"
)

// FuzzParse checks that Parse never panics, never claims more bytes than it
// was given, and that a header it accepts parses the same on its own. The seed
// corpus lives in testdata/fuzz/FuzzParse.
func FuzzParse(f *testing.F) {
	f.Fuzz(func(t *testing.T, buf []byte) {
		src, n, err := Parse(buf)
		if n < 0 || n > len(buf) {
			t.Fatalf("n = %d for %d bytes", n, len(buf))
		}
		if err != nil {
			if n != 0 || src.IsValid() {
				t.Fatalf("n = %d, src = %v with error %v", n, src, err)
			}
			if !errors.Is(err, ErrIncomplete) && !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v is neither ErrIncomplete nor ErrMalformed", err)
			}
			return
		}
		again, m, err := Parse(buf[:n])
		if err != nil || m != n || again != src {
			t.Fatalf("header alone: src %v n %d err %v; with trailing bytes: src %v n %d", again, m, err, src, n)
		}
	})
}
