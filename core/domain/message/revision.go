package message

import (
	"errors"
	"time"
)

// Action is what a revision did to a message (im_message_revisions.action).
type Action string

const (
	ActionRecall Action = "recall"
	ActionEdit   Action = "edit"
	ActionDelete Action = "delete" // deleted for everyone; a user's own deletions are dellog ranges
)

// Revision is one change of a stored message. It is kept with the month of the message, so the
// message is found again without a route (seed 000 §7).
type Revision struct {
	Action Action
	Editor int64
	At     time.Time
	// Message is the message after the change.
	Message Message
}

// ErrUnchanged is what a change returns when there is nothing to do, such as a retry of a
// change that already committed: the store then writes nothing and answers with the message
// as it is.
var ErrUnchanged = errors.New("message unchanged")
