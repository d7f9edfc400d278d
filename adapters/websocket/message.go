package websocket

import (
	"errors"
	"fmt"

	cws "github.com/coder/websocket"

	"github.com/imdhq/imd/clients/go/frame"
)

// readLimit is the largest WebSocket message a client may send: one frame of PROTOCOL §2 with
// the largest body. The library closes a connection over it with 1009 itself.
const readLimit = frame.HeaderLen + frame.MaxBody

// badMessage is why a message closed its connection, with the close code PROTOCOL §7 gives it.
type badMessage struct {
	code cws.StatusCode
	err  error
}

func (b *badMessage) Error() string { return b.err.Error() }

// decodeMessage turns one WebSocket message into the one frame it must hold (PROTOCOL §7): a
// text message is 1003, a frame over the body limit 1009, anything else that is not exactly
// one frame 1002.
func decodeMessage(typ cws.MessageType, data []byte) (frame.Frame, error) {
	if typ != cws.MessageBinary {
		return frame.Frame{}, &badMessage{cws.StatusUnsupportedData, errors.New("text message; frames travel in binary messages")}
	}
	f, n, err := frame.Decode(data)
	switch {
	case errors.Is(err, frame.ErrTooLarge):
		return frame.Frame{}, &badMessage{cws.StatusMessageTooBig, err}
	case errors.Is(err, frame.ErrIncomplete):
		return frame.Frame{}, &badMessage{cws.StatusProtocolError, fmt.Errorf("message of %d bytes holds part of a frame", len(data))}
	case err != nil:
		return frame.Frame{}, &badMessage{cws.StatusProtocolError, err}
	case n != len(data):
		return frame.Frame{}, &badMessage{cws.StatusProtocolError, fmt.Errorf("message holds more than one frame (%d bytes after it)", len(data)-n)}
	}
	return f, nil
}
