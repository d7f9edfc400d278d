package websocket

import (
	"errors"
	"testing"

	cws "github.com/coder/websocket"

	"github.com/imdhq/imd/clients/go/frame"
)

// FuzzDecodeMessage: any message is one frame or a close code of PROTOCOL §7, never a panic;
// a frame accepted re-encodes to the bytes it came from when uncompressed.
func FuzzDecodeMessage(f *testing.F) {
	valid, _ := frame.Append(nil, 2, 1, 1, []byte(`{}`), 0)
	f.Add(true, valid)
	f.Add(true, append(append([]byte(nil), valid...), valid...))
	f.Add(true, valid[:10])
	f.Add(false, []byte(`{"token":"x"}`))
	f.Add(true, []byte{})
	f.Fuzz(func(t *testing.T, binary bool, data []byte) {
		typ := cws.MessageText
		if binary {
			typ = cws.MessageBinary
		}
		fr, err := decodeMessage(typ, data)
		if err != nil {
			var bad *badMessage
			if !errors.As(err, &bad) {
				t.Fatalf("error %v has no close code", err)
			}
			switch bad.code {
			case cws.StatusUnsupportedData, cws.StatusProtocolError, cws.StatusMessageTooBig:
			default:
				t.Fatalf("close code %v", bad.code)
			}
			return
		}
		if !binary {
			t.Fatal("a text message was accepted")
		}
		if len(fr.Body) > frame.MaxInflated {
			t.Fatalf("body of %d bytes", len(fr.Body))
		}
	})
}
