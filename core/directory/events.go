package directory

import (
	"context"
	"encoding/json"

	"imd/core/mailbox"
)

// eventBatch bounds one mailbox append, so adding a big group's members writes in steps.
const eventBatch = 500

// friendEvent is the payload of a FRIEND mailbox event.
type friendEvent struct {
	Action string `json:"action"`  // request, accepted, added, removed
	UserID int64  `json:"user_id"` // the other user
}

// memberEvent is the payload of a MEMBER mailbox event.
type memberEvent struct {
	Action     string `json:"action"` // added, removed, role, muted
	Topic      string `json:"topic"`
	GroupID    int64  `json:"group_id"`
	By         int64  `json:"by,omitempty"` // the acting user; absent for operators
	Role       string `json:"role,omitempty"`
	MutedUntil int64  `json:"muted_until,omitempty"` // Unix ms; 0 when unmuted
}

// notice is one event for one user.
type notice struct {
	user           int64
	kind           mailbox.Type
	conversationID int64
	payload        any
}

// post tells the users concerned, after the change is committed. A lost event costs a live
// update only: the change itself stands, and clients see it on their next reads, so a failure
// is logged, never returned.
func (s *Service) post(ctx context.Context, tenant string, notices []notice) {
	if s.d.Events == nil || len(notices) == 0 {
		return
	}
	events := make([]mailbox.Event, 0, min(len(notices), eventBatch))
	flush := func() {
		if _, err := s.d.Events.Post(ctx, tenant, events); err != nil {
			s.d.Log.ErrorContext(ctx, "social events not posted", "tenant", tenant, "events", len(events), "err", err)
		}
		events = events[:0]
	}
	for _, n := range notices {
		payload, err := json.Marshal(n.payload)
		if err != nil {
			s.d.Log.ErrorContext(ctx, "social event not encodable", "tenant", tenant, "err", err)
			continue
		}
		events = append(events, mailbox.Event{
			User: n.user, Device: mailbox.AllDevices, Type: n.kind, ConversationID: n.conversationID, Payload: payload,
		})
		if len(events) == eventBatch {
			flush()
		}
	}
	if len(events) > 0 {
		flush()
	}
}

func friendNotice(to int64, action string, other int64) notice {
	return notice{user: to, kind: mailbox.Friend, payload: friendEvent{Action: action, UserID: other}}
}
