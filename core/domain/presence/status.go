package presence

import "time"

// State is what others see of a user (issue 31): online on any device of any node, offline,
// or unknown while the registry cannot be read, so a lost Redis never reads as "online".
type State string

const (
	Online  State = "online"
	Offline State = "offline"
	Unknown State = "unknown"
)

// Status is one user's state as answered and pushed; LastSeen is zero when unknown or hidden.
type Status struct {
	User     int64
	State    State
	LastSeen time.Time
}

// Record is what MySQL keeps of a user's presence: when the user was last seen online
// (written at each change, never per heartbeat) and whether the user hides it.
type Record struct {
	LastSeen time.Time
	Hidden   bool
}

// Seen is the status of a user with live devices (online) or without (offline, last seen
// at r.LastSeen); a hidden user is offline with no last_seen to everyone.
func Seen(user int64, online bool, r Record) Status {
	switch {
	case r.Hidden:
		return Status{User: user, State: Offline}
	case online:
		return Status{User: user, State: Online}
	}
	return Status{User: user, State: Offline, LastSeen: r.LastSeen}
}
