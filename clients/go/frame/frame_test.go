package frame

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"strings"
	"testing"
)

// rawFrame builds frame bytes by hand, independently of Append, so tests can
// produce frames Append refuses to write.
func rawFrame(magic uint16, version uint8, cmd, flags uint16, requestID uint64, seq uint32, bodyLen uint32, body []byte) []byte {
	b := binary.BigEndian.AppendUint16(nil, magic)
	b = append(b, version)
	b = binary.BigEndian.AppendUint16(b, cmd)
	b = binary.BigEndian.AppendUint16(b, flags)
	b = binary.BigEndian.AppendUint64(b, requestID)
	b = binary.BigEndian.AppendUint32(b, seq)
	b = binary.BigEndian.AppendUint32(b, bodyLen)
	return append(b, body...)
}

func zlibBytes(t testing.TB, level int, plain []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, err := zlib.NewWriterLevel(&buf, level)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := zw.Write(plain); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func jsonBody(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"messages":[`)
	for i := 0; b.Len() < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"topic":"grp_42","seq":1234,"type":"text","content":{"text":"hello world"}}`)
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

func TestRoundTrip(t *testing.T) {
	tests := []struct {
		name           string
		cmd            uint16
		requestID      uint64
		seq            uint32
		body           []byte
		compressMin    int
		wantCompressed bool
	}{
		{name: "empty body", cmd: 2, body: nil},
		{name: "small json", cmd: 1, requestID: 7, seq: 9, body: []byte(`{"token":"t","device_id":1}`)},
		{name: "max ids", cmd: 0xFFFF, requestID: ^uint64(0), seq: ^uint32(0), body: []byte(`{}`)},
		{name: "below threshold stays plain", cmd: 4, body: jsonBody(400), compressMin: 512},
		{name: "compression off", cmd: 4, body: jsonBody(4000), compressMin: 0},
		{name: "compressed", cmd: 12, seq: 3, body: jsonBody(4000), compressMin: 512, wantCompressed: true},
		{name: "incompressible stays plain", cmd: 4, body: []byte(`{"k":"q9Zx"}`), compressMin: 1},
		{name: "plain at MaxBody", cmd: 4, body: bytes.Repeat([]byte{'a'}, MaxBody)},
		{name: "inflated up to MaxInflated", cmd: 12, body: bytes.Repeat([]byte{'a'}, MaxInflated), compressMin: 1, wantCompressed: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prefix := []byte("prefix")
			buf, err := Append(prefix, tt.cmd, tt.requestID, tt.seq, tt.body, tt.compressMin)
			if err != nil {
				t.Fatalf("Append: %v", err)
			}
			if !bytes.Equal(buf[:len(prefix)], prefix) {
				t.Fatal("Append changed the bytes before dst's end")
			}
			encoded := buf[len(prefix):]
			f, n, err := Decode(encoded)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if n != len(encoded) {
				t.Errorf("n = %d, want %d", n, len(encoded))
			}
			if f.Command != tt.cmd || f.RequestID != tt.requestID || f.SequenceID != tt.seq {
				t.Errorf("header = %+v", f.Header)
			}
			if f.Compressed() != tt.wantCompressed {
				t.Errorf("compressed = %v, want %v", f.Compressed(), tt.wantCompressed)
			}
			if int(f.BodyLen) != len(encoded)-HeaderLen {
				t.Errorf("BodyLen = %d, want %d", f.BodyLen, len(encoded)-HeaderLen)
			}
			if !bytes.Equal(f.Body, tt.body) {
				t.Errorf("body differs: got %d bytes, want %d", len(f.Body), len(tt.body))
			}
		})
	}
}

func TestDecodeBodyDoesNotAliasInput(t *testing.T) {
	buf, err := Append(nil, 1, 1, 1, []byte(`{"a":1}`), 0)
	if err != nil {
		t.Fatal(err)
	}
	f, _, err := Decode(buf)
	if err != nil {
		t.Fatal(err)
	}
	for i := range buf {
		buf[i] = 0
	}
	if string(f.Body) != `{"a":1}` {
		t.Fatalf("body changed with the input buffer: %q", f.Body)
	}
}

func TestDecodeForeignCompressor(t *testing.T) {
	plain := jsonBody(3000)
	for _, level := range []int{zlib.NoCompression, zlib.BestSpeed, zlib.DefaultCompression, zlib.BestCompression} {
		z := zlibBytes(t, level, plain)
		f, n, err := Decode(rawFrame(Magic, Version, 12, FlagCompressed, 5, 6, uint32(len(z)), z))
		if err != nil {
			t.Fatalf("level %d: %v", level, err)
		}
		if n != HeaderLen+len(z) || !bytes.Equal(f.Body, plain) {
			t.Fatalf("level %d: n = %d, body equal = %v", level, n, bytes.Equal(f.Body, plain))
		}
	}
}

func TestDecodeLeavesFollowingFrame(t *testing.T) {
	first, _ := Append(nil, 1, 1, 1, []byte(`{"n":1}`), 0)
	both, _ := Append(first, 2, 2, 2, jsonBody(2000), 1)
	f, n, err := Decode(both)
	if err != nil || n != len(first) || f.Command != 1 {
		t.Fatalf("first: cmd %d n %d err %v", f.Command, n, err)
	}
	f, n, err = Decode(both[n:])
	if err != nil || n != len(both)-len(first) || f.Command != 2 {
		t.Fatalf("second: cmd %d n %d err %v", f.Command, n, err)
	}
}

func TestDecodeByteByByte(t *testing.T) {
	for _, compressMin := range []int{0, 1} {
		want := jsonBody(1500)
		encoded, err := Append(nil, 6, 11, 12, want, compressMin)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < len(encoded); i++ {
			if _, n, err := Decode(encoded[:i]); !errors.Is(err, ErrIncomplete) || n != 0 {
				t.Fatalf("compressMin %d, %d of %d bytes: n = %d, err = %v", compressMin, i, len(encoded), n, err)
			}
		}
		f, n, err := Decode(encoded)
		if err != nil || n != len(encoded) || !bytes.Equal(f.Body, want) {
			t.Fatalf("compressMin %d whole frame: n = %d, err = %v", compressMin, n, err)
		}
	}
}

func TestDecodeErrors(t *testing.T) {
	body := []byte(`{"x":1}`)
	valid := zlibBytes(t, zlib.DefaultCompression, jsonBody(500))
	badChecksum := bytes.Clone(valid)
	badChecksum[len(badChecksum)-1] ^= 0xFF
	bomb := zlibBytes(t, zlib.BestCompression, make([]byte, MaxInflated+1))

	tests := []struct {
		name string
		buf  []byte
		want error
	}{
		{"empty", nil, ErrIncomplete},
		{"short header", rawFrame(Magic, Version, 1, 0, 0, 0, 7, body)[:HeaderLen-1], ErrIncomplete},
		{"short body", rawFrame(Magic, Version, 1, 0, 0, 0, 7, body)[:HeaderLen+3], ErrIncomplete},
		{"bad magic", rawFrame(0x4950, Version, 1, 0, 0, 0, 7, body), ErrBadMagic},
		{"http request", []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), ErrBadMagic},
		{"version 0", rawFrame(Magic, 0, 1, 0, 0, 0, 7, body), ErrBadVersion},
		{"version 2", rawFrame(Magic, 2, 1, 0, 0, 0, 7, body), ErrBadVersion},
		{"unknown flag", rawFrame(Magic, Version, 1, 2, 0, 0, 7, body), ErrBadFlags},
		{"high flag", rawFrame(Magic, Version, 1, 0x8001, 0, 0, 7, body), ErrBadFlags},
		{"body_length over MaxBody", rawFrame(Magic, Version, 1, 0, 0, 0, MaxBody+1, nil), ErrTooLarge},
		{"body_length max uint32", rawFrame(Magic, Version, 1, 0, 0, 0, ^uint32(0), nil), ErrTooLarge},
		{"compressed but empty", rawFrame(Magic, Version, 1, FlagCompressed, 0, 0, 0, nil), ErrCorruptBody},
		{"compressed but plain json", rawFrame(Magic, Version, 1, FlagCompressed, 0, 0, 7, body), ErrCorruptBody},
		{"truncated zlib stream", rawFrame(Magic, Version, 1, FlagCompressed, 0, 0, uint32(len(valid)-5), valid[:len(valid)-5]), ErrCorruptBody},
		{"bad checksum", rawFrame(Magic, Version, 1, FlagCompressed, 0, 0, uint32(len(badChecksum)), badChecksum), ErrCorruptBody},
		{"bytes after zlib stream", rawFrame(Magic, Version, 1, FlagCompressed, 0, 0, uint32(len(valid)+2), append(bytes.Clone(valid), 0, 0)), ErrCorruptBody},
		{"zip bomb", rawFrame(Magic, Version, 1, FlagCompressed, 0, 0, uint32(len(bomb)), bomb), ErrTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if len(bomb) > MaxBody {
				t.Fatalf("test bomb is %d bytes, does not fit a frame", len(bomb))
			}
			f, n, err := Decode(tt.buf)
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if n != 0 || f.Body != nil {
				t.Fatalf("n = %d, body = %d bytes on error", n, len(f.Body))
			}
		})
	}
}

func TestParseHeaderMatchesDecode(t *testing.T) {
	buf, err := Append(nil, 18, 99, 100, jsonBody(1000), 1)
	if err != nil {
		t.Fatal(err)
	}
	h, err := ParseHeader(buf[:HeaderLen])
	if err != nil {
		t.Fatal(err)
	}
	f, _, err := Decode(buf)
	if err != nil {
		t.Fatal(err)
	}
	if h != f.Header {
		t.Fatalf("ParseHeader = %+v, Decode header = %+v", h, f.Header)
	}
}

func TestAppendErrors(t *testing.T) {
	random := make([]byte, MaxBody+1)
	var x uint32 = 2463534242
	for i := range random { // xorshift: incompressible and deterministic
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		random[i] = byte(x)
	}
	tests := []struct {
		name        string
		body        []byte
		compressMin int
	}{
		{"plain over MaxBody", bytes.Repeat([]byte{'a'}, MaxBody+1), 0},
		{"incompressible over MaxBody", random, 1},
		{"over MaxInflated", bytes.Repeat([]byte{'a'}, MaxInflated+1), 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst := []byte("keep")
			out, err := Append(dst, 1, 1, 1, tt.body, tt.compressMin)
			if !errors.Is(err, ErrTooLarge) {
				t.Fatalf("err = %v, want ErrTooLarge", err)
			}
			if string(out) != "keep" {
				t.Fatalf("dst changed to %d bytes", len(out))
			}
		})
	}
}
