package frame

import "testing"

var benchCases = []struct {
	name        string
	body        []byte
	compressMin int
}{
	{"plain_200B", jsonBody(200), 0},
	{"plain_4KiB", jsonBody(4096), 0},
	{"compressed_4KiB", jsonBody(4096), 512},
	{"compressed_32KiB", jsonBody(32 << 10), 512},
}

func BenchmarkAppend(b *testing.B) {
	for _, bc := range benchCases {
		b.Run(bc.name, func(b *testing.B) {
			buf := make([]byte, 0, HeaderLen+len(bc.body))
			b.SetBytes(int64(len(bc.body)))
			b.ReportAllocs()
			for b.Loop() {
				var err error
				if buf, err = Append(buf[:0], 4, 1, 1, bc.body, bc.compressMin); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkDecode(b *testing.B) {
	for _, bc := range benchCases {
		b.Run(bc.name, func(b *testing.B) {
			buf, err := Append(nil, 4, 1, 1, bc.body, bc.compressMin)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(bc.body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := Decode(buf); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
