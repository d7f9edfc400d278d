package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/imdhq/imd/adapters/mysql/sqlcdb"
	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/social"
	"github.com/imdhq/imd/core/domain/topic"
	"github.com/imdhq/imd/core/domain/webhook"
	"github.com/imdhq/imd/ports"
)

// Member roles of t_conversation_members.
const (
	roleOwner  = "owner"
	roleMember = "member"
)

// Directory implements ports.Directory over t_users, t_friendships, t_groups, t_conversations,
// t_p2p_conversations and t_conversation_members.
type Directory struct {
	cluster *Cluster
	now     func() time.Time
}

var _ ports.Directory = (*Directory)(nil)

// NewDirectory returns the directory over the provisioned tenants of c.
func NewDirectory(c *Cluster) *Directory {
	return &Directory{cluster: c, now: func() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }}
}

// CreateUser registers a user; registering a known user again updates the nickname.
func (d *Directory) CreateUser(ctx context.Context, tenant string, u social.User) error {
	t, err := d.cluster.tenant(tenant)
	if err != nil {
		return err
	}
	if u.ID <= 0 {
		return apperr.New(apperr.InvalidArgument, "user id must be positive")
	}
	now := d.now()
	err = t.q.UpsertUser(ctx, sqlcdb.UpsertUserParams{UserID: u.ID, Nickname: u.Nickname, CreatedAt: now, UpdatedAt: now})
	if err != nil {
		return fmt.Errorf("create user %d: %w", u.ID, err)
	}
	return nil
}

func (d *Directory) UserExists(ctx context.Context, tenant string, userID int64) (bool, error) {
	t, err := d.cluster.tenant(tenant)
	if err != nil {
		return false, err
	}
	ok, err := t.q.UserExists(ctx, userID)
	if err != nil {
		return false, fmt.Errorf("user %d exists: %w", userID, err)
	}
	return ok, nil
}

// AddFriendship records the pair once, smaller id first; adding it again is a no-op.
func (d *Directory) AddFriendship(ctx context.Context, tenant string, a, b int64) error {
	t, err := d.cluster.tenant(tenant)
	if err != nil {
		return err
	}
	if a <= 0 || b <= 0 || a == b {
		return apperr.New(apperr.InvalidArgument, "a friendship needs two distinct users")
	}
	small, big := min(a, b), max(a, b)
	// Only operators make a friendship without a request: its event has no actor (by 0).
	err = inTx(ctx, t.db, func(q *sqlcdb.Queries) error { return befriend(ctx, q, small, big, 0, d.now()) })
	if err != nil {
		return fmt.Errorf("add friendship %d-%d: %w", small, big, err)
	}
	return nil
}

func (d *Directory) AreFriends(ctx context.Context, tenant string, a, b int64) (bool, error) {
	t, err := d.cluster.tenant(tenant)
	if err != nil {
		return false, err
	}
	ok, err := t.q.AreFriends(ctx, sqlcdb.AreFriendsParams{UserSmall: min(a, b), UserBig: max(a, b)})
	if err != nil {
		return false, fmt.Errorf("are %d and %d friends: %w", a, b, err)
	}
	return ok, nil
}

// CreateGroup writes the group, its conversation and its members (owner included) in one
// transaction. An existing group id or conversation id is a conflict.
func (d *Directory) CreateGroup(ctx context.Context, tenant string, g social.Group, conversationID int64, members []int64, by int64) (social.Conversation, error) {
	t, err := d.cluster.tenant(tenant)
	if err != nil {
		return social.Conversation{}, err
	}
	if g.ID <= 0 || g.Owner <= 0 || conversationID <= 0 {
		return social.Conversation{}, apperr.New(apperr.InvalidArgument, "group, owner and conversation ids must be positive")
	}
	now := d.now()
	conv := social.Conversation{ID: conversationID, Topic: topic.ForGroup(g.ID), Kind: social.KindGroup, GroupID: g.ID, CreatedAt: now}
	err = inTx(ctx, t.db, func(q *sqlcdb.Queries) error {
		if err := q.InsertGroup(ctx, sqlcdb.InsertGroupParams{
			GroupID: g.ID, OwnerID: g.Owner, Name: g.Name, ConversationID: conversationID, CreatedAt: now, UpdatedAt: now,
		}); err != nil {
			return err
		}
		if err := insertConversation(ctx, q, conv); err != nil {
			return err
		}
		if _, err := q.AddMember(ctx, sqlcdb.AddMemberParams{ConversationID: conversationID, UserID: g.Owner, JoinedAt: now, Role: roleOwner}); err != nil {
			return err
		}
		added, err := addMembers(ctx, q, conversationID, members, now)
		if err != nil {
			return err
		}
		return recordMembers(ctx, q, true, g.ID, append([]int64{g.Owner}, added...), by, now)
	})
	if isDuplicate(err, "") {
		return social.Conversation{}, apperr.Wrap(apperr.Conflict, "group or conversation already exists", err)
	}
	if err != nil {
		return social.Conversation{}, fmt.Errorf("create group %d: %w", g.ID, err)
	}
	return conv, nil
}

func insertConversation(ctx context.Context, q *sqlcdb.Queries, conv social.Conversation) error {
	return q.InsertConversation(ctx, sqlcdb.InsertConversationParams{
		ID: conv.ID, Type: int8(conv.Kind), Topic: conv.Topic, GroupID: conv.GroupID,
		LastMsgAt: conv.CreatedAt, CreatedAt: conv.CreatedAt,
	})
}

// addMembers adds users and returns those who were no members before.
func addMembers(ctx context.Context, q *sqlcdb.Queries, conversationID int64, users []int64, now time.Time) ([]int64, error) {
	var added []int64
	for _, u := range users {
		if u <= 0 {
			return nil, apperr.New(apperr.InvalidArgument, "member ids must be positive")
		}
		n, err := q.AddMember(ctx, sqlcdb.AddMemberParams{ConversationID: conversationID, UserID: u, JoinedAt: now, Role: roleMember})
		if err != nil {
			return nil, err
		}
		if n > 0 {
			added = append(added, u)
		}
	}
	return added, nil
}

// befriend writes the pair's friendship and, when it is new, its friendship.changed event by
// user by (0: an operator).
func befriend(ctx context.Context, q *sqlcdb.Queries, small, big, by int64, now time.Time) error {
	n, err := q.AddFriendship(ctx, sqlcdb.AddFriendshipParams{UserSmall: small, UserBig: big, CreatedAt: now})
	if err != nil || n == 0 {
		return err
	}
	return recordEvent(ctx, q, webhook.FriendshipRecord(small, big, true, by, now))
}

// recordMembers writes the member.joined or member.left event of users by user by (0: an
// operator), when there are any.
func recordMembers(ctx context.Context, q *sqlcdb.Queries, joined bool, groupID int64, users []int64, by int64, now time.Time) error {
	if len(users) == 0 {
		return nil
	}
	return recordEvent(ctx, q, webhook.MemberRecord(joined, groupID, users, by, now))
}

// AddMembers adds users to a group conversation; known members stay as they are. P2P
// membership is the pair itself and cannot change.
func (d *Directory) AddMembers(ctx context.Context, tenant string, topicName string, users []int64, by int64) error {
	t, err := d.cluster.tenant(tenant)
	if err != nil {
		return err
	}
	p, err := topic.Parse(topicName)
	if err != nil {
		return apperr.Wrap(apperr.InvalidArgument, "invalid topic", err)
	}
	if p.Kind != topic.Group {
		return apperr.New(apperr.InvalidArgument, "members of a P2P conversation cannot change")
	}
	conv, err := d.Conversation(ctx, tenant, topicName)
	if err != nil {
		return err
	}
	now := d.now()
	err = inTx(ctx, t.db, func(q *sqlcdb.Queries) error {
		added, err := addMembers(ctx, q, conv.ID, users, now)
		if err != nil {
			return err
		}
		return recordMembers(ctx, q, true, conv.GroupID, added, by, now)
	})
	if err != nil {
		return fmt.Errorf("add members to %s: %w", topicName, err)
	}
	return nil
}

// Members lists a topic's members in ascending order: the pair of a P2P topic, the member rows
// of a group. An unknown group has none.
func (d *Directory) Members(ctx context.Context, tenant, topicName string) ([]int64, error) {
	t, err := d.cluster.tenant(tenant)
	if err != nil {
		return nil, err
	}
	p, err := topic.Parse(topicName)
	if err != nil {
		return nil, apperr.Wrap(apperr.InvalidArgument, "invalid topic", err)
	}
	if p.Kind == topic.P2P {
		return []int64{p.UserA, p.UserB}, nil
	}
	conv, err := t.q.ConversationByTopic(ctx, topicName)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("members of %s: %w", topicName, err)
	}
	users, err := t.q.ConversationMembers(ctx, conv.ID)
	if err != nil {
		return nil, fmt.Errorf("members of %s: %w", topicName, err)
	}
	return users, nil
}

func (d *Directory) IsMember(ctx context.Context, tenant, topicName string, user int64) (bool, error) {
	t, err := d.cluster.tenant(tenant)
	if err != nil {
		return false, err
	}
	p, err := topic.Parse(topicName)
	if err != nil {
		return false, apperr.Wrap(apperr.InvalidArgument, "invalid topic", err)
	}
	if p.Kind == topic.P2P {
		return p.Has(user), nil
	}
	conv, err := t.q.ConversationByTopic(ctx, topicName)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("is %d a member of %s: %w", user, topicName, err)
	}
	ok, err := t.q.IsConversationMember(ctx, sqlcdb.IsConversationMemberParams{ConversationID: conv.ID, UserID: user})
	if err != nil {
		return false, fmt.Errorf("is %d a member of %s: %w", user, topicName, err)
	}
	return ok, nil
}

// Conversation looks a conversation up by topic.
func (d *Directory) Conversation(ctx context.Context, tenant, topicName string) (social.Conversation, error) {
	t, err := d.cluster.tenant(tenant)
	if err != nil {
		return social.Conversation{}, err
	}
	row, err := t.q.ConversationByTopic(ctx, topicName)
	return conversationOf(row, err, "conversation "+topicName)
}

// ConversationByID looks a conversation up by its numeric alias.
func (d *Directory) ConversationByID(ctx context.Context, tenant string, id int64) (social.Conversation, error) {
	t, err := d.cluster.tenant(tenant)
	if err != nil {
		return social.Conversation{}, err
	}
	row, err := t.q.ConversationByID(ctx, id)
	return conversationOf(row, err, fmt.Sprintf("conversation %d", id))
}

func conversationOf(row sqlcdb.TConversation, err error, what string) (social.Conversation, error) {
	if errors.Is(err, sql.ErrNoRows) {
		return social.Conversation{}, fmt.Errorf("%s: %w", what, social.ErrNotFound)
	}
	if err != nil {
		return social.Conversation{}, fmt.Errorf("%s: %w", what, err)
	}
	return social.Conversation{
		ID: row.ID, Topic: row.Topic, Kind: social.ConversationKind(row.Type), GroupID: row.GroupID,
		CreatedAt: row.CreatedAt.UTC(),
	}, nil
}

// EnsureP2P returns the one conversation of a user pair. The first caller's id wins: the pair
// row is claimed with an upsert that keeps an existing id, and a racing caller's claim waits on
// the winner's row lock, then reads the winner's id. Every step tolerates a finished earlier
// run, so a caller that finds a claimed pair completes whatever is missing.
func (d *Directory) EnsureP2P(ctx context.Context, tenant string, a, b int64, id int64) (social.Conversation, error) {
	t, err := d.cluster.tenant(tenant)
	if err != nil {
		return social.Conversation{}, err
	}
	if a <= 0 || b <= 0 || a == b || id <= 0 {
		return social.Conversation{}, apperr.New(apperr.InvalidArgument, "a P2P conversation needs two distinct users and an id")
	}
	small, big := min(a, b), max(a, b)
	now := d.now()
	var conv social.Conversation
	err = inTx(ctx, t.db, func(q *sqlcdb.Queries) error {
		if err := q.ClaimP2P(ctx, sqlcdb.ClaimP2PParams{UserSmall: small, UserBig: big, ConversationID: id}); err != nil {
			return err
		}
		// Under READ COMMITTED this sees the winner's committed row.
		winner, err := q.P2PConversationID(ctx, sqlcdb.P2PConversationIDParams{UserSmall: small, UserBig: big})
		if errors.Is(err, sql.ErrNoRows) {
			return apperr.New(apperr.Conflict, fmt.Sprintf("conversation id %d belongs to another pair", id))
		}
		if err != nil {
			return err
		}
		conv = social.Conversation{ID: winner, Topic: topic.ForPair(small, big), Kind: social.KindP2P, CreatedAt: now}
		existing, err := q.ConversationByID(ctx, winner)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			if err := insertConversation(ctx, q, conv); err != nil {
				return err
			}
		case err != nil:
			return err
		case existing.Topic != conv.Topic:
			return apperr.New(apperr.Conflict, fmt.Sprintf("conversation %d is %s, not %s", winner, existing.Topic, conv.Topic))
		}
		// Member rows carry each user's read state (seed 003 §14); a pair's rows are no join.
		_, err = addMembers(ctx, q, winner, []int64{small, big}, now)
		return err
	})
	if err != nil {
		return social.Conversation{}, fmt.Errorf("ensure p2p %d-%d: %w", small, big, err)
	}
	return d.ConversationByID(ctx, tenant, conv.ID)
}

// inTx runs fn in one READ COMMITTED transaction.
func inTx(ctx context.Context, db *sql.DB, fn func(*sqlcdb.Queries) error) error {
	return inTxAt(ctx, db, sql.LevelReadCommitted, fn)
}

// inTxAt runs fn in one transaction of the given isolation level.
func inTxAt(ctx context.Context, db *sql.DB, level sql.IsolationLevel, fn func(*sqlcdb.Queries) error) error {
	tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: level})
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	if err := fn(sqlcdb.New(tx)); err != nil {
		tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}
