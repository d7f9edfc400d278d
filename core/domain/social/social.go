// Package social holds users, groups and conversations: what every send is checked against.
package social

import (
	"time"

	"github.com/imdhq/imd/core/domain/apperr"
)

// User of a tenant.
type User struct {
	ID       int64
	Nickname string
}

// ConversationKind matches t_conversations.type (seed 003 §10.2).
type ConversationKind int

const (
	KindP2P   ConversationKind = 1
	KindGroup ConversationKind = 2
)

// Conversation is the numeric alias (seed 003) of a topic.
type Conversation struct {
	ID        int64
	Topic     string
	Kind      ConversationKind
	GroupID   int64
	CreatedAt time.Time
}

// Group is a group chat with its owner.
type Group struct {
	ID    int64
	Owner int64
	Name  string
}

// ErrNotFound: no such user, group or conversation.
var ErrNotFound = apperr.New(apperr.NotFound, "not found")
