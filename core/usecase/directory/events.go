package directory

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/imdhq/imd/core/domain/mailbox"
	"github.com/imdhq/imd/core/domain/social"
	"github.com/imdhq/imd/core/usecase/send"
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

// eventMuteAll names the group event of a mute-all change.
const eventMuteAll = "mute_all"

// groupEvent is the content of a group-wide event: a `system` message in the group's topic,
// which every member syncs, instead of a mailbox row per member.
type groupEvent struct {
	Event   string `json:"event"`
	MuteAll bool   `json:"mute_all"`
	By      int64  `json:"by,omitempty"` // the acting user; absent for operators
}

// announce writes a group event into the topic after the change committed. Like post, a lost
// event costs a live update only: the change stands and the group's info shows it, and a
// retry of the request would find nothing left to change, so a failure is logged, never
// returned. Each change is an event of its own: its client_msg_id carries a fresh id.
func (s *Service) announce(ctx context.Context, tenant string, actor int64, c social.Conversation, ev groupEvent) {
	if s.d.Topics == nil {
		return
	}
	content, err := json.Marshal(ev)
	if err != nil {
		s.d.Log.ErrorContext(ctx, "group event not encodable", "tenant", tenant, "topic", c.Topic, "err", err)
		return
	}
	id, err := s.d.IDs.NextID()
	if err != nil {
		s.d.Log.ErrorContext(ctx, "group event not written", "tenant", tenant, "topic", c.Topic, "event", ev.Event, "err", err)
		return
	}
	_, err = s.d.Topics.Publish(ctx, send.Event{
		Tenant: tenant, Conversation: c, Actor: actor, ClientMsgID: fmt.Sprintf("%s:%d", ev.Event, id), Content: content,
	})
	if err != nil {
		s.d.Log.ErrorContext(ctx, "group event not written", "tenant", tenant, "topic", c.Topic, "event", ev.Event, "err", err)
	}
}
