package bench

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"net"
	"strconv"
	"strings"
	"sync"

	"github.com/imdhq/imd/clients/go/client"
)

// clientMsgID names a bench message "b<n>.<sent_ns>": unique per sender,
// and carrying its send time (nanoseconds after the run's epoch) so that a
// recipient in the same process can time the delivery without parsing the
// content.
func clientMsgID(n, sentNs int64) string {
	b := make([]byte, 0, 32)
	b = append(b, 'b')
	b = strconv.AppendInt(b, n, 10)
	b = append(b, '.')
	return string(strconv.AppendInt(b, sentNs, 10))
}

// sentAt reads the send time back from a client_msg_id.
func sentAt(clientMsgID string) (int64, bool) {
	_, ns, ok := strings.Cut(clientMsgID, ".")
	if !ok || !strings.HasPrefix(clientMsgID, "b") {
		return 0, false
	}
	v, err := strconv.ParseInt(ns, 10, 64)
	return v, err == nil
}

// content is a bench message body of at least size bytes: the text is padded with dots when
// the number alone makes it shorter.
func content(n int64, size int) json.RawMessage {
	b := strconv.AppendInt([]byte(`{"text":"bench #`), n, 10)
	if pad := size - len(b) - len(`"}`); pad > 0 {
		b = append(b, ' ')
		b = append(b, strings.Repeat(".", pad-1)...)
	}
	return append(b, `"}`...)
}

// tinodeText is the body size of issue 16's Tinode comparison ("~100-byte text"): t1 and t2
// send it; W1–W5 keep their short bodies, so their figures stay comparable with earlier ones.
const tinodeText = 100

// errorKey files an error under a short, stable name for the report: the
// contract code when the server answered one, else the kind of failure.
func errorKey(err error) string {
	var ce *client.CodeError
	var ne net.Error
	switch {
	case err == nil:
		return "none"
	case errors.As(err, &ce):
		return strconv.Itoa(ce.Code)
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, client.ErrClosed):
		return "closed"
	case errors.Is(err, client.ErrProtocol):
		return "protocol"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "eof"
	case errors.As(err, &ne):
		return "network"
	default:
		return "other"
	}
}

// errorCounts counts errors by key; errors are rare, so a mutex is fine.
type errorCounts struct {
	mu sync.Mutex
	m  map[string]int64
}

func (e *errorCounts) add(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.m[key]++
}

func (e *errorCounts) total() int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	var n int64
	for _, c := range e.m {
		n += c
	}
	return n
}

func (e *errorCounts) snapshot() map[string]int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return maps.Clone(e.m)
}
