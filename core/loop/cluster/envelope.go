package cluster

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/imdhq/imd/core/domain/delivery"
	"github.com/imdhq/imd/core/domain/message"
)

// Kinds of envelope on a node's channel.
const (
	envPushes = "pushes" // deliver pushes to users connected on the receiving node
	envDevice = "device" // one push to one device (or every device) of one user: mailbox events
	envKick   = "kick"   // close a device's older connection: a newer one authenticated elsewhere
	envUser   = "user"   // a user was disabled or deleted: forget it may authenticate, KICK its connections
)

// envelope is one entry of a node's channel. Recipient lists are shared by index, so the
// messages of one topic in a pass carry their members once.
type envelope struct {
	Kind   string     `json:"kind"`
	SentAt int64      `json:"sent_at"` // Unix ms, for cross_node_push_lag_seconds
	Sets   [][]int64  `json:"sets,omitempty"`
	Pushes []wirePush `json:"pushes,omitempty"`
	User   int64      `json:"user,omitempty"`
	Device uint64     `json:"device,omitempty"`
	Token  uint64     `json:"token,omitempty"`  // envKick: the connection to close
	Reason string     `json:"reason,omitempty"` // envUser: the KICK reason (PROTOCOL §3)
}

type wirePush struct {
	Set           int    `json:"set"` // index into Sets
	Sender        int64  `json:"sender,omitempty"`
	ExcludeDevice uint64 `json:"exclude_device,omitempty"`
	NotMailbox    bool   `json:"not_mailbox,omitempty"`
	// Notify says a device that refuses a MESSAGE push here also gets its user a system push
	// (the job allows one); Muted are the users of the push's set who muted the conversation.
	// An envelope of an older node has neither: its failures get rows only, as then.
	Notify  bool             `json:"notify,omitempty"`
	Muted   []int64          `json:"muted,omitempty"`
	Kind    delivery.Kind    `json:"kind"`
	Message *message.Message `json:"message,omitempty"`
	Data    json.RawMessage  `json:"data,omitempty"`
}

// toWire is a for the users of set, who are on one node: only their mute state travels.
func toWire(set int, users []int64, a delivery.Addressed) wirePush {
	var muted []int64
	for _, u := range users {
		if a.Target.Muted[u] {
			muted = append(muted, u)
		}
	}
	return wirePush{
		Set: set, Sender: a.Target.Sender, ExcludeDevice: a.Target.ExcludeDevice, NotMailbox: a.Target.NotMailbox,
		Notify: !a.Target.NotPush, Muted: muted, Kind: a.Push.Kind, Message: a.Push.Message, Data: a.Push.Data,
	}
}

// decodeEnvelope reads a channel entry; anything malformed is an error, never a panic or a
// push to the wrong place.
func decodeEnvelope(body []byte) (envelope, error) {
	var e envelope
	if err := json.Unmarshal(body, &e); err != nil {
		return envelope{}, fmt.Errorf("node envelope: %w", err)
	}
	switch e.Kind {
	case envPushes, envDevice:
		for _, p := range e.Pushes {
			if p.Set < 0 || p.Set >= len(e.Sets) {
				return envelope{}, fmt.Errorf("node envelope: recipient set %d of %d", p.Set, len(e.Sets))
			}
			if p.Kind == delivery.KindMessage && p.Message == nil {
				return envelope{}, errors.New("node envelope: message push without a message")
			}
		}
		if e.Kind == envDevice && (len(e.Pushes) != 1 || e.User == 0) {
			return envelope{}, errors.New("node envelope: device push needs one push and a user")
		}
	case envKick:
		if e.User == 0 || e.Device == 0 {
			return envelope{}, errors.New("node envelope: kick needs a user and a device")
		}
	case envUser:
		if e.User == 0 || e.Reason == "" {
			return envelope{}, errors.New("node envelope: user envelope needs a user and a reason")
		}
	default:
		return envelope{}, fmt.Errorf("node envelope: unknown kind %q", e.Kind)
	}
	return e, nil
}

// addressed turns the wire pushes back into pushes; pushes of one set share one slice.
func (e envelope) addressed() []delivery.Addressed {
	out := make([]delivery.Addressed, len(e.Pushes))
	for i, p := range e.Pushes {
		var muted map[int64]bool
		for _, u := range p.Muted {
			if muted == nil {
				muted = make(map[int64]bool, len(p.Muted))
			}
			muted[u] = true
		}
		out[i] = delivery.Addressed{
			Target: delivery.Target{Recipients: e.Sets[p.Set], Sender: p.Sender, ExcludeDevice: p.ExcludeDevice, NotMailbox: p.NotMailbox,
				NotPush: !p.Notify, Muted: muted},
			Push: delivery.Push{Kind: p.Kind, Message: p.Message, Data: p.Data},
		}
	}
	return out
}
