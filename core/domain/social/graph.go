package social

import (
	"time"

	"github.com/imdhq/imd/core/domain/apperr"
)

// Role is a member's standing in a group (t_conversation_members.role).
type Role string

const (
	RoleOwner  Role = "owner"
	RoleAdmin  Role = "admin"
	RoleMember Role = "member"
)

// Valid reports whether r is one of the three roles.
func (r Role) Valid() bool { return r == RoleOwner || r == RoleAdmin || r == RoleMember }

// Manages reports whether the role may run the group: owners and admins. They also speak while
// the group is muted (seed 003 §9.4).
func (r Role) Manages() bool { return r == RoleOwner || r == RoleAdmin }

// Outranks reports whether r may act on a member holding other: the owner on everyone else,
// an admin on plain members only.
func (r Role) Outranks(other Role) bool {
	switch r {
	case RoleOwner:
		return other != RoleOwner
	case RoleAdmin:
		return other == RoleMember
	}
	return false
}

// ErrNotOwner: the acting user is no longer the group's owner, e.g. it handed the group over
// in a concurrent request.
var ErrNotOwner = apperr.New(apperr.Conflict, "not the group's owner")

// Member is one member of a group.
type Member struct {
	UserID int64
	Role   Role
	// MutedUntil is when a per-member mute ends; the zero time means not muted.
	MutedUntil time.Time
	JoinedAt   time.Time
}

// MutedAt reports whether the member's own mute still runs at now.
func (m Member) MutedAt(now time.Time) bool { return now.Before(m.MutedUntil) }

// GroupInfo is a group as clients and operators see it.
type GroupInfo struct {
	Group
	ConversationID int64
	MuteAll        bool
	CreatedAt      time.Time
}

// GroupPolicy is what a group send is checked against besides membership: the mute-all switch
// and the members that differ from a plain, unmuted member. Only those are listed, so the
// policy of a big group stays small enough to cache next to its member list.
type GroupPolicy struct {
	MuteAll bool
	// Special holds the members whose role is not member or who carry a running mute at the
	// time the policy was read.
	Special []Member
}

// Relation is what a P2P send between two users is checked against.
type Relation struct {
	Friends bool
	// Blocked: one of the two blocked the other (either direction refuses the send).
	Blocked bool
}

// FriendRequest is a pending request From → To (t_friend_requests).
type FriendRequest struct {
	From      int64
	To        int64
	Message   string
	CreatedAt time.Time
}

// MaxRequestMessage bounds the note of a friend request (column width).
const MaxRequestMessage = 255

// Profile is what a user shows to others.
type Profile struct {
	UserID   int64
	Nickname string
	// Avatar is an object-store key, never image bytes.
	Avatar    string
	CreatedAt time.Time
}

// Profile limits (column widths).
const (
	MaxNickname = 64
	MaxAvatar   = 255
)
