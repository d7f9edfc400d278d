package tlstest

import (
	"bytes"
	"strings"
	"testing"
)

func record(typ byte, n int) []byte {
	return append([]byte{typ, 3, 3, byte(n >> 8), byte(n)}, bytes.Repeat([]byte{0xAB}, n)...)
}

// The check must catch what a clear-text leak looks like, wherever in the stream it starts,
// and accept records however the stream is cut.
func TestRecordLayer(t *testing.T) {
	valid := append(append(record(22, 90), record(20, 1)...), record(23, 300)...)
	frame := []byte{0x49, 0x4D, 0x01, 0x00, 0x02} // a frame header: magic "IM", version 1
	tests := []struct {
		name    string
		stream  []byte
		piece   int
		wantErr string
	}{
		{"records whole", valid, 0, ""},
		{"records one byte at a time", valid, 1, ""},
		{"cut inside a record", valid[:len(valid)-7], 13, ""},
		{"a frame in clear text first", append(frame, valid...), 0, "content type 73"},
		{"a frame after the records", append(append([]byte(nil), valid...), frame...), 3, "content type 73"},
		{"an HTTP answer", []byte("HTTP/1.1 400 Bad Request\r\n"), 0, "content type 72"},
		{"a bad version", []byte{23, 2, 0, 0, 1, 0}, 0, "version 2.0"},
		{"an oversized record", []byte{23, 3, 3, 0xFF, 0xFF}, 0, "length 65535"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r RecordLayer
			for b := tt.stream; len(b) > 0; {
				n := len(b)
				if tt.piece > 0 {
					n = min(n, tt.piece)
				}
				_, _ = r.Write(b[:n])
				b = b[n:]
			}
			err := r.Err()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("error %v, want one about %q", err, tt.wantErr)
			}
		})
	}
}
