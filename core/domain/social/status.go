package social

import "github.com/imdhq/imd/core/domain/apperr"

// UserStatus is t_users.status: what an operator made of a user (DESIGN §8.1). Only an active user authenticates; a disabled one keeps everything
// and comes back when enabled; a deleted one is gone for good, its id never reused.
type UserStatus int

// The statuses, as stored.
const (
	UserUnknown  UserStatus = 0 // never created: no row
	UserActive   UserStatus = 1
	UserDisabled UserStatus = 2
	UserDeleted  UserStatus = 3
)

// String names the status as the admin API shows it.
func (s UserStatus) String() string {
	switch s {
	case UserActive:
		return "active"
	case UserDisabled:
		return "disabled"
	case UserDeleted:
		return "deleted"
	}
	return "unknown"
}

// Settable reports a status a user can be moved to.
func (s UserStatus) Settable() bool { return s >= UserActive && s <= UserDeleted }

// ErrUserDeleted: the user was deleted, which is final; it cannot be enabled, disabled or
// created again.
var ErrUserDeleted = apperr.New(apperr.Conflict, "the user was deleted")
