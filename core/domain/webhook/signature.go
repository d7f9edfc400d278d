package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"time"
)

// The headers of every webhook request (docs/DESIGN.md issue-32 part 2 "Signature").
const (
	SignatureHeader = "Imd-Signature"
	EventIDHeader   = "Imd-Event-Id"
)

// Sign is the Imd-Signature value of body sent at at: `t=<unix seconds>,v1=<hex
// HMAC-SHA256(secret, t + "." + body)>`. The timestamp is inside the MAC so a receiver that
// refuses old timestamps refuses replays; clients/go/webhook.Verify checks it.
func Sign(secret string, at time.Time, body []byte) string {
	t := strconv.FormatInt(at.Unix(), 10)
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(t))
	mac.Write([]byte{'.'})
	mac.Write(body)
	return "t=" + t + ",v1=" + hex.EncodeToString(mac.Sum(nil))
}
