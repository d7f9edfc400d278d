// Package webhook checks the requests imd sends to a webhook endpoint: their signature
// (docs/DESIGN.md issue-32 part 2 "Signature") and their age, so a bot or an integration
// acts only on events imd sent, and none twice from a replayed request.
package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// SignatureHeader carries `t=<unix seconds>,v1=<hex HMAC-SHA256(secret, t + "." + body)>`;
// during a secret rotation it may carry several v1.
const SignatureHeader = "Imd-Signature"

// EventIDHeader names the event; a retried request carries the same id, so a receiver
// dedupes on it (delivery is at least once).
const EventIDHeader = "Imd-Event-Id"

// DefaultTolerance is how far a request's timestamp may be from the receiver's clock.
const DefaultTolerance = 5 * time.Minute

// MaxBody bounds what ReadVerified reads of a request.
const MaxBody = 1 << 20

// Errors of Verify.
var (
	ErrNoSignature  = errors.New("webhook: no valid Imd-Signature header")
	ErrTooOld       = errors.New("webhook: timestamp outside the tolerance")
	ErrBadSignature = errors.New("webhook: no signature matches")
)

// Verify checks header (the Imd-Signature value) against the raw body with secret: one v1
// must be the MAC of its timestamp and body, and the timestamp within tolerance of now.
func Verify(secret, header string, body []byte, now time.Time, tolerance time.Duration) error {
	var ts string
	var sigs [][]byte
	for part := range strings.SplitSeq(header, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			if sig, err := hex.DecodeString(v); err == nil {
				sigs = append(sigs, sig)
			}
		}
	}
	at, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || len(sigs) == 0 {
		return ErrNoSignature
	}
	if d := now.Sub(time.Unix(at, 0)); d > tolerance || d < -tolerance {
		return ErrTooOld
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts))
	mac.Write([]byte{'.'})
	mac.Write(body)
	want := mac.Sum(nil)
	for _, sig := range sigs {
		if hmac.Equal(sig, want) {
			return nil
		}
	}
	return ErrBadSignature
}

// ReadVerified reads r's body (at most MaxBody bytes) and verifies it with secret at now
// (time.Now() in a handler) with DefaultTolerance; the body is returned only when it verifies.
func ReadVerified(r *http.Request, secret string, now time.Time) ([]byte, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxBody+1))
	if err != nil {
		return nil, fmt.Errorf("webhook: read body: %w", err)
	}
	if len(body) > MaxBody {
		return nil, fmt.Errorf("webhook: body over %d bytes", MaxBody)
	}
	if err := Verify(secret, r.Header.Get(SignatureHeader), body, now, DefaultTolerance); err != nil {
		return nil, err
	}
	return body, nil
}
