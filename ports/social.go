package ports

import (
	"context"
	"time"

	"github.com/imdhq/imd/core/domain/auth"
	"github.com/imdhq/imd/core/domain/mailbox"
	"github.com/imdhq/imd/core/domain/social"
	"github.com/imdhq/imd/core/domain/stats"
	"github.com/imdhq/imd/core/domain/tenant"
)

// The social graph beyond Directory (seed 003 §9.4, issue 6): profiles, friend requests,
// blocks, group roles and mutes. Methods that name a group take its id; its topic is always
// grp_<id>. A user or group that does not exist is social.ErrNotFound unless a method says
// otherwise.

// Profiles reads and changes what users show to others.
type Profiles interface {
	Profile(ctx context.Context, tenant string, user int64) (social.Profile, error)
	// UpdateProfile changes nickname and avatar of an existing user.
	UpdateProfile(ctx context.Context, tenant string, p social.Profile) error
}

// Friends lists and ends friendships and keeps friend requests (t_friend_requests). Directory
// makes friendships directly (admin) and answers AreFriends.
type Friends interface {
	// Friends lists a user's friends above after, ascending, at most limit.
	Friends(ctx context.Context, tenant string, user, after int64, limit int) ([]int64, error)
	// RemoveFriendship ends a friendship; ending none is no error. by is the user ending it, 0
	// for an operator: the actor of its friendship.changed event (issue 32).
	RemoveFriendship(ctx context.Context, tenant string, a, b, by int64) error
	// RequestFriend records a pending request; asking again replaces its message and time.
	RequestFriend(ctx context.Context, tenant string, r social.FriendRequest) error
	// FriendRequests lists pending requests to the user (incoming) or from it, newest first.
	FriendRequests(ctx context.Context, tenant string, user int64, incoming bool, limit int) ([]social.FriendRequest, error)
	// AcceptFriendRequest removes the pending request from → to and records the friendship, in
	// one transaction; social.ErrNotFound when no such request is pending. to accepts, so it is
	// the actor of the friendship.changed event.
	AcceptFriendRequest(ctx context.Context, tenant string, from, to int64) error
	// DeleteFriendRequest removes the pending request from → to and reports whether one was.
	DeleteFriendRequest(ctx context.Context, tenant string, from, to int64) (bool, error)
}

// Blocks is t_blocks: a user refusing P2P messages from another.
type Blocks interface {
	// Block is idempotent.
	Block(ctx context.Context, tenant string, user, blocked int64) error
	// Unblock is idempotent.
	Unblock(ctx context.Context, tenant string, user, blocked int64) error
	// Blocked lists whom the user blocked, ascending.
	Blocked(ctx context.Context, tenant string, user int64) ([]int64, error)
}

// SendRules is what a send is checked against besides membership, in one round trip each, so
// the resolver can cache the answers like the member list.
type SendRules interface {
	// Relation of two distinct users: friendship and a block in either direction.
	Relation(ctx context.Context, tenant string, a, b int64) (social.Relation, error)
	// GroupPolicy is the group's mute-all switch and its special members, mutes still running
	// at now.
	GroupPolicy(ctx context.Context, tenant string, groupID int64, now time.Time) (social.GroupPolicy, error)
}

// Groups reads and changes group rosters beyond Directory.CreateGroup/AddMembers.
type Groups interface {
	Group(ctx context.Context, tenant string, groupID int64) (social.GroupInfo, error)
	// GroupMembers pages the members above user id after, ascending.
	GroupMembers(ctx context.Context, tenant string, groupID, after int64, limit int) ([]social.Member, error)
	// GroupMember is one member; social.ErrNotFound when the user is not a member.
	GroupMember(ctx context.Context, tenant string, groupID, user int64) (social.Member, error)
	// RemoveMembers removes users from the group; non-members are skipped. by is the user
	// removing them (a member leaving is its own), 0 for an operator.
	RemoveMembers(ctx context.Context, tenant string, groupID int64, users []int64, by int64) error
	// SetRole changes a member's role; social.ErrNotFound when the user is not a member.
	SetRole(ctx context.Context, tenant string, groupID, user int64, role social.Role) error
	// MuteMember mutes a member until the given time; the zero time unmutes. social.ErrNotFound
	// when the user is not a member.
	MuteMember(ctx context.Context, tenant string, groupID, user int64, until time.Time) error
	SetMuteAll(ctx context.Context, tenant string, groupID int64, on bool) error
	// TransferOwnership makes member to the owner (t_groups.owner_id and its role) and the
	// owner from an admin, in one transaction. It fails with social.ErrNotOwner when from is
	// not the owner (any more) and with social.ErrNotFound when to is not a member.
	TransferOwnership(ctx context.Context, tenant string, groupID, from, to int64) error
	// UserConversations pages the conversations a user is a member of, by conversation id
	// above after, ascending; kind 0 lists both kinds.
	UserConversations(ctx context.Context, tenant string, user int64, kind social.ConversationKind, after int64, limit int) ([]social.Conversation, error)
}

// Reports keeps users' reports of messages for moderation.
type Reports interface {
	// AddReport stores r (ID and times set by the caller). A second report of the same message
	// by the same user returns the first one and stores nothing.
	AddReport(ctx context.Context, tenant string, r social.Report) (social.Report, error)
	Reports(ctx context.Context, tenant string, q social.ReportQuery) ([]social.Report, error)
	// SetReportStatus fails with social.ErrNotFound for an unknown report.
	SetReportStatus(ctx context.Context, tenant string, id int64, status social.ReportStatus, at time.Time) error
}

// Summaries reads the statistics the write path keeps, never counting month tables.
type Summaries interface {
	// MirrorMonths sums the route mirror per month, ascending.
	MirrorMonths(ctx context.Context, tenant string) ([]stats.MirrorMonth, error)
	// Totals counts users and groups.
	Totals(ctx context.Context, tenant string) (stats.Totals, error)
	// Days reads the daily summary of the days from–to (inclusive, UTC midnights), ascending:
	// at most limit days, the newest ones when there are more.
	Days(ctx context.Context, tenant string, from, to time.Time, limit int) ([]stats.Day, error)
}

// DailyCounter adds to the daily summary. Callers aggregate first: one call per tenant and day
// every few seconds, never one per message (a per-message upsert would make the day's row
// the hottest row of the tenant).
type DailyCounter interface {
	// AddDay adds d's counts to its day's row, creating it, in one statement.
	AddDay(ctx context.Context, tenant string, d stats.Day) error
}

// KnownTenant reports whether a tenant is served by this process (the tenant registry's
// answer), for the use cases that refuse requests of unknown tenants.
type KnownTenant func(name string) bool

// TenantStore is the registry of provisioned tenants shared by every node (the imd_registry
// database): configured tenants are not in it.
type TenantStore interface {
	Tenants(ctx context.Context) ([]tenant.Info, error)
	// AddTenant records a provisioned tenant. A name or database already recorded is an
	// apperr.Conflict unless the same pair is added again, which is a no-op.
	AddTenant(ctx context.Context, t tenant.Info) error
}

// TenantStorage makes a tenant's database usable on this node: created if missing, migrated,
// pooled, on the server dsn names ("" the deployment's own). Idempotent.
type TenantStorage interface {
	Provision(ctx context.Context, tenant, database, dsn string) error
}

// TokenInspector verifies a client token like Tokens.Verify and also returns what revocation
// needs: its id, issue and expiry times.
type TokenInspector interface {
	Inspect(token string) (auth.Token, error)
}

// TokenRevocations is the deny-list of revoked tokens, kept where it outlives Redis (MySQL;
// DESIGN §11). Entries expire when the tokens they deny would have expired anyway, so the list
// never grows without bound.
type TokenRevocations interface {
	// RevokeToken denies one token (by jti) until it expires.
	RevokeToken(ctx context.Context, tenant, tokenID string, expires time.Time) error
	// RevokeUser denies every token of the user issued before at; the entry lives ttl (the
	// longest token lifetime).
	RevokeUser(ctx context.Context, tenant string, user int64, at time.Time, ttl time.Duration) error
	// Revocation reports whether the token id is denied and since when the user's tokens are
	// (zero time: never).
	Revocation(ctx context.Context, tenant, tokenID string, user int64) (tokenRevoked bool, userCutoff time.Time, err error)
}

// Users answers whether a user exists in a tenant (t_users) and in which status: a token
// signed for a user that does not exist, or no longer does, or is disabled, authenticates
// nobody (issue 33).
type Users interface {
	// UserExists reports a user that was created and not deleted (a disabled user exists).
	UserExists(ctx context.Context, tenant string, userID int64) (bool, error)
	// UserStatus is the user's status; social.UserUnknown for a user never created.
	UserStatus(ctx context.Context, tenant string, userID int64) (social.UserStatus, error)
}

// UserStates changes a user's status (admin). Deletion is final and keeps the row, so the id is
// never reused and messages keep naming their sender.
type UserStates interface {
	// SetUserStatus moves the user to status (active, disabled or deleted). Setting the status
	// it has is no error. social.ErrNotFound for a user never created; social.ErrUserDeleted
	// for moving a deleted user to another status.
	SetUserStatus(ctx context.Context, tenant string, userID int64, status social.UserStatus) error
}

// UserSessions ends what a user holds open on every node when an operator disables or deletes
// it (DESIGN §8.1).
type UserSessions interface {
	// EndUser makes every node forget the cached answers that let the user authenticate and
	// KICK its connections with reason. An error says a live node may not have been told; its
	// cached answers still end within authn's UserTTL, and a retry tells it again.
	EndUser(ctx context.Context, tenant string, user int64, reason string) error
}

// Authenticator turns a client token into an identity: verified, of a tenant this deployment
// serves, for a user that exists, not revoked. A connection's AUTH calls it once per connection; it reads the deny-list.
type Authenticator interface {
	Authenticate(ctx context.Context, token string) (auth.Identity, error)
}

// ObjectStore signs short-lived upload and download URLs for media objects, so media bytes
// never pass through the message path (seed 003 §9.4: media only by reference). The server
// itself reads an uploaded image and writes its thumbnail beside it (issue 32).
type ObjectStore interface {
	// PresignPut returns a URL accepting one PUT of at most maxSize bytes of contentType at key
	// until expires.
	PresignPut(ctx context.Context, key, contentType string, maxSize int64, expires time.Time) (string, error)
	// PresignGet returns a URL reading key until expires.
	PresignGet(ctx context.Context, key string, expires time.Time) (string, error)
	// ReadObject returns the bytes of key: an absent object is apperr.NotFound, one of more
	// than limit bytes apperr.TooLarge, read no further than past the limit.
	ReadObject(ctx context.Context, key string, limit int64) ([]byte, error)
	// WriteObject stores data under key as contentType, replacing what was there.
	WriteObject(ctx context.Context, key, contentType string, data []byte) error
}

// ControlEvents posts per-user control events (mailbox rows plus a live EVENT push), e.g.
// friend and membership changes. The inbox's Mailer implements it.
type ControlEvents interface {
	Post(ctx context.Context, tenant string, events []mailbox.Event) ([]mailbox.Event, error)
}
