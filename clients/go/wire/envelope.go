package wire

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// Envelope is the body of every server → client frame.
type Envelope struct {
	Code      int    `json:"code"`
	Msg       string `json:"msg"`
	RequestID string `json:"request_id"` // the frame's request_id in decimal
	// Data is null on errors.
	Data json.RawMessage `json:"data"`
}

// MsgOK is the msg of a successful envelope.
const MsgOK = "ok"

// OK builds a success envelope body carrying data.
func OK(requestID uint64, data any) ([]byte, error) {
	raw, err := json.Marshal(data)
	if err != nil {
		return nil, fmt.Errorf("wire: marshal data of request %d: %w", requestID, err)
	}
	// Written by hand so data is marshalled once, not again inside an Envelope.
	b := make([]byte, 0, len(raw)+64)
	b = append(b, `{"code":0,"msg":"`+MsgOK+`","request_id":"`...)
	b = strconv.AppendUint(b, requestID, 10)
	b = append(b, `","data":`...)
	b = append(b, raw...)
	return append(b, '}'), nil
}

// Err builds an error envelope body: code ≠ 0, data null.
func Err(requestID uint64, code int, msg string) []byte {
	// A string always marshals: invalid UTF-8 becomes U+FFFD rather than an error.
	quoted, _ := json.Marshal(msg)
	b := make([]byte, 0, len(quoted)+64)
	b = append(b, `{"code":`...)
	b = strconv.AppendInt(b, int64(code), 10)
	b = append(b, `,"msg":`...)
	b = append(b, quoted...)
	b = append(b, `,"request_id":"`...)
	b = strconv.AppendUint(b, requestID, 10)
	return append(b, `","data":null}`...)
}
