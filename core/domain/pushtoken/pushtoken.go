// Package pushtoken is native push (docs/DESIGN.md issue-32 "Native push"): the token a device
// registers with APNs or FCM, the registration body that carries it, and the alert sent to it.
package pushtoken

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/imdhq/imd/core/domain/apperr"
)

// Platform is the provider a token belongs to.
type Platform string

// The providers (issue 32).
const (
	APNs Platform = "apns"
	FCM  Platform = "fcm"
)

// Platforms lists every provider, for per-provider metrics and dead letters.
var Platforms = []Platform{APNs, FCM}

// Limits of the registration body, the column sizes of migration 0015.
const (
	MaxDeviceID = 64
	MaxAppID    = 128
	MaxToken    = 512
	MaxLocale   = 35
	// MaxBody bounds the registration body before it is decoded.
	MaxBody = 4 << 10
)

// Token is one device's registration.
type Token struct {
	User      int64
	DeviceID  string
	Platform  Platform
	AppID     string // APNs topic (bundle id) or FCM project id
	Token     string
	Locale    string
	UpdatedAt time.Time
}

// Registration is the body of PUT /api/v1/push-tokens and of the PUSH_TOKEN_SET frame
// (docs/PROTOCOL.md); DELETE and PUSH_TOKEN_DELETE carry DeviceID alone.
type Registration struct {
	DeviceID string   `json:"device_id"`
	Platform Platform `json:"platform"`
	AppID    string   `json:"app_id"`
	Token    string   `json:"token"`
	Locale   string   `json:"locale,omitempty"`
}

// ParseRegistration decodes and checks a registration body from a device: unknown fields,
// a missing or oversized field, or a platform other than apns/fcm are 40001 (docs/PROTOCOL.md),
// so nothing bad reaches the table or a provider.
func ParseRegistration(body []byte) (Registration, error) {
	if len(body) > MaxBody {
		return Registration{}, apperr.New(apperr.InvalidArgument, "push token body too large")
	}
	var r Registration
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return Registration{}, apperr.Wrap(apperr.InvalidArgument, "bad push token body", err)
	}
	if dec.More() {
		return Registration{}, apperr.New(apperr.InvalidArgument, "bad push token body: trailing data")
	}
	if err := r.Validate(); err != nil {
		return Registration{}, err
	}
	return r, nil
}

// Validate checks every field of r (ParseRegistration).
func (r Registration) Validate() error {
	if err := ValidDeviceID(r.DeviceID); err != nil {
		return err
	}
	if r.Platform != APNs && r.Platform != FCM {
		return apperr.New(apperr.InvalidArgument, `platform must be "apns" or "fcm"`)
	}
	for _, f := range []struct {
		name, v string
		max     int
		need    bool
	}{{"app_id", r.AppID, MaxAppID, true}, {"token", r.Token, MaxToken, true}, {"locale", r.Locale, MaxLocale, false}} {
		if err := field(f.name, f.v, f.max, f.need); err != nil {
			return err
		}
	}
	return nil
}

// ValidDeviceID checks the device id of a registration or a deletion.
func ValidDeviceID(id string) error { return field("device_id", id, MaxDeviceID, true) }

// field checks one printable single-line ASCII-safe value: a token goes into a URL path
// (APNs /3/device/<token>) and a header-free JSON body, so control characters and '/' are
// refused rather than escaped.
func field(name, v string, max int, need bool) error {
	switch {
	case need && v == "":
		return apperr.New(apperr.InvalidArgument, name+" is required")
	case len(v) > max:
		return apperr.New(apperr.InvalidArgument, fmt.Sprintf("%s longer than %d bytes", name, max))
	case !utf8.ValidString(v) || strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f || r == '/' }):
		return apperr.New(apperr.InvalidArgument, name+" has a control character or '/'")
	}
	return nil
}

// For is r as the token of user, registered at at.
func (r Registration) For(user int64, at time.Time) Token {
	return Token{User: user, DeviceID: r.DeviceID, Platform: r.Platform, AppID: r.AppID, Token: r.Token, Locale: r.Locale, UpdatedAt: at}
}

// Alert is one notification to one token.
type Alert struct {
	Token        Token
	Title        string
	Body         string // empty in hide-content mode
	Badge        int
	CollapseID   string // per conversation, at most MaxCollapseID bytes
	Conversation int64
	MsgID        int64
}

// MaxCollapseID is APNs' limit on apns-collapse-id.
const MaxCollapseID = 64

// CollapseID is the collapse key of a conversation's alerts: a newer alert replaces an older
// one on the device rather than stacking (issue 32).
func CollapseID(conversationID int64) string { return fmt.Sprintf("c%d", conversationID) }

// ErrInvalidToken is a provider's answer that the token is no more (APNs 410 or
// BadDeviceToken, FCM UNREGISTERED or NOT_FOUND): the token is removed, never retried.
var ErrInvalidToken = errors.New("push token invalid")

// ErrRetryable is a provider's answer worth a retry (429, 5xx, no answer).
var ErrRetryable = errors.New("push provider busy")

// DeadLetter is an alert given up on after the last attempt.
type DeadLetter struct {
	ID        int64
	Provider  Platform
	User      int64
	DeviceID  string
	MsgID     int64
	Attempts  int
	LastError string
	CreatedAt time.Time
}
