// Package webhook is the domain of event webhooks (docs/DESIGN.md issue-32, part 2): the
// endpoints a tenant subscribes to events and the signature of every request sent to them.
package webhook

import (
	"fmt"
	"net/url"
	"slices"
	"time"

	"github.com/imdhq/imd/core/domain/apperr"
)

// EventType names what happened; an endpoint receives only the types it subscribed to.
type EventType string

// The event types of issue 32.
const (
	MessageCreated    EventType = "message.created"
	MessageEdited     EventType = "message.edited"
	MessageRecalled   EventType = "message.recalled"
	MemberJoined      EventType = "member.joined"
	MemberLeft        EventType = "member.left"
	FriendshipChanged EventType = "friendship.changed"
	ReportFiled       EventType = "report.filed"
)

// EventTypes are every known type, in the order the API documents them.
var EventTypes = []EventType{MessageCreated, MessageEdited, MessageRecalled, MemberJoined, MemberLeft, FriendshipChanged, ReportFiled}

// LeaseName is the per-tenant lease (ports.Locks) of webhook delivery: a pass holds it so one
// node delivers a tenant's events at a time, and a replay takes it so no pass writes a cursor
// over the replay's reset (docs/DESIGN.md issue-32 part 2 "One deliverer per tenant").
const LeaseName = "webhooks"

// Limits of an endpoint's fields, so a row always fits its columns.
const (
	MaxURL         = 2048
	MaxDescription = 256
)

// ErrNotFound: no such endpoint in the tenant.
var ErrNotFound = apperr.New(apperr.NotFound, "webhook endpoint not found")

// Endpoint is a receiver of a tenant's events. Secret signs its requests; the admin API
// shows it only when it is made (DESIGN issue-32 "Endpoints").
type Endpoint struct {
	ID          int64
	URL         string
	Description string
	Events      []EventType
	Enabled     bool
	// BotID binds the endpoint to a bot: it receives the events of the conversations the bot
	// may read only (DESIGN issue-32 "Bots"); 0 is every conversation of the tenant.
	BotID     int64
	Secret    string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Subscribed reports whether e receives events of type t.
func (e Endpoint) Subscribed(t EventType) bool { return slices.Contains(e.Events, t) }

// Validate checks what an operator may set: an absolute http(s) URL, known event types (at
// least one, no repeats) and a bounded description.
func (e Endpoint) Validate() error {
	if len(e.URL) > MaxURL {
		return apperr.New(apperr.InvalidArgument, fmt.Sprintf("url longer than %d bytes", MaxURL))
	}
	u, err := url.Parse(e.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return apperr.New(apperr.InvalidArgument, "url must be an absolute http or https URL")
	}
	if len(e.Description) > MaxDescription {
		return apperr.New(apperr.InvalidArgument, fmt.Sprintf("description longer than %d bytes", MaxDescription))
	}
	if e.BotID < 0 {
		return apperr.New(apperr.InvalidArgument, "bot_id must not be negative")
	}
	if len(e.Events) == 0 {
		return apperr.New(apperr.InvalidArgument, "events must name at least one event type")
	}
	for i, t := range e.Events {
		if !slices.Contains(EventTypes, t) {
			return apperr.New(apperr.InvalidArgument, fmt.Sprintf("unknown event type %q", t))
		}
		if slices.Contains(e.Events[:i], t) {
			return apperr.New(apperr.InvalidArgument, fmt.Sprintf("event type %q named twice", t))
		}
	}
	return nil
}
