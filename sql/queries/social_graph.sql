-- Social graph beyond social.sql (issue 6): profiles, friend lists and requests, blocks, group
-- roles and mutes, reports, statistics.

-- name: UserProfile :one
SELECT user_id, nickname, avatar, created_at FROM t_users WHERE user_id = ?;

-- name: UpdateUserProfile :execrows
UPDATE t_users SET nickname = ?, avatar = ?, updated_at = ? WHERE user_id = ?;

-- Friends from each side of the pair, each through its own index; the adapter merges them.
-- name: FriendsAbove :many
SELECT user_big FROM t_friendships WHERE user_small = ? AND user_big > ? ORDER BY user_big LIMIT ?;

-- name: FriendsBelow :many
SELECT user_small FROM t_friendships WHERE user_big = ? AND user_small > ? ORDER BY user_small LIMIT ?;

-- name: RemoveFriendship :execrows
DELETE FROM t_friendships WHERE user_small = ? AND user_big = ?;

-- name: UpsertFriendRequest :exec
INSERT INTO t_friend_requests (from_user, to_user, message, created_at)
VALUES (?, ?, ?, ?)
ON DUPLICATE KEY UPDATE message = VALUES(message), created_at = VALUES(created_at);

-- name: IncomingFriendRequests :many
SELECT from_user, to_user, message, created_at FROM t_friend_requests
WHERE to_user = ?
ORDER BY created_at DESC, from_user
LIMIT ?;

-- name: OutgoingFriendRequests :many
SELECT from_user, to_user, message, created_at FROM t_friend_requests
WHERE from_user = ?
ORDER BY created_at DESC, to_user
LIMIT ?;

-- name: DeleteFriendRequest :execrows
DELETE FROM t_friend_requests WHERE from_user = ? AND to_user = ?;

-- name: AddBlock :exec
INSERT INTO t_blocks (user_id, blocked_user_id, created_at)
VALUES (?, ?, ?)
ON DUPLICATE KEY UPDATE user_id = user_id;

-- name: RemoveBlock :exec
DELETE FROM t_blocks WHERE user_id = ? AND blocked_user_id = ?;

-- name: BlockedBy :many
SELECT blocked_user_id FROM t_blocks WHERE user_id = ? ORDER BY blocked_user_id;

-- The P2P send check in one round trip: friendship, and a block either way (primary keys only).
-- name: PairRelation :one
SELECT
    EXISTS(SELECT 1 FROM t_friendships WHERE user_small = sqlc.arg(user_small) AND user_big = sqlc.arg(user_big)) AS friends,
    EXISTS(SELECT 1 FROM t_blocks
           WHERE (user_id = sqlc.arg(user_small) AND blocked_user_id = sqlc.arg(user_big))
              OR (user_id = sqlc.arg(user_big) AND blocked_user_id = sqlc.arg(user_small))) AS blocked;

-- name: GroupRow :one
SELECT group_id, owner_id, name, conversation_id, mute_all, created_at FROM t_groups WHERE group_id = ?;

-- A group's members that differ from a plain, unmuted member, in two reads over their own
-- indexes (idx_conversation_role, idx_conversation_muted): never the whole member list.
-- name: ManagingMembers :many
SELECT user_id, role, muted_until, joined_at FROM t_conversation_members
WHERE conversation_id = ? AND role IN ('owner', 'admin');

-- name: MutedMembers :many
SELECT user_id, role, muted_until, joined_at FROM t_conversation_members
WHERE conversation_id = sqlc.arg(conversation_id) AND muted_until > sqlc.arg(now);

-- name: GroupMembersPage :many
SELECT user_id, role, muted_until, joined_at FROM t_conversation_members
WHERE conversation_id = sqlc.arg(conversation_id) AND user_id > sqlc.arg(after)
ORDER BY user_id
LIMIT ?;

-- name: GroupMemberRow :one
SELECT user_id, role, muted_until, joined_at FROM t_conversation_members
WHERE conversation_id = ? AND user_id = ?;

-- name: RemoveMember :execrows
DELETE FROM t_conversation_members WHERE conversation_id = ? AND user_id = ?;

-- name: SetMemberRole :execrows
UPDATE t_conversation_members SET role = ? WHERE conversation_id = ? AND user_id = ?;

-- name: SetMemberMutedUntil :execrows
UPDATE t_conversation_members SET muted_until = ? WHERE conversation_id = ? AND user_id = ?;

-- name: SetGroupMuteAll :execrows
UPDATE t_groups SET mute_all = ?, updated_at = ? WHERE group_id = ?;

-- name: UserConversationsPage :many
SELECT c.* FROM t_conversation_members AS m
JOIN t_conversations AS c ON c.id = m.conversation_id
WHERE m.user_id = sqlc.arg(user_id) AND m.conversation_id > sqlc.arg(after)
ORDER BY m.conversation_id
LIMIT ?;

-- name: UserConversationsOfKindPage :many
SELECT c.* FROM t_conversation_members AS m
JOIN t_conversations AS c ON c.id = m.conversation_id
WHERE m.user_id = sqlc.arg(user_id) AND m.conversation_id > sqlc.arg(after) AND c.type = sqlc.arg(kind)
ORDER BY m.conversation_id
LIMIT ?;

-- name: InsertReport :exec
INSERT INTO t_reports (id, reporter, topic, seqid, reason, status, created_at, updated_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?);

-- name: ReportByMessage :one
SELECT * FROM t_reports WHERE reporter = ? AND topic = ? AND seqid = ?;

-- name: ReportsPage :many
SELECT * FROM t_reports
WHERE id < sqlc.arg(before)
ORDER BY id DESC
LIMIT ?;

-- name: ReportsOfStatusPage :many
SELECT * FROM t_reports
WHERE status = sqlc.arg(status) AND id < sqlc.arg(before)
ORDER BY id DESC
LIMIT ?;

-- name: SetReportStatus :execrows
UPDATE t_reports SET status = ?, updated_at = ? WHERE id = ?;

-- name: ReportExists :one
SELECT EXISTS(SELECT 1 FROM t_reports WHERE id = ?) AS found;

-- Per-month sums over the route mirror (idx_month_topic): never a COUNT over a month table.
-- name: MirrorMonthSums :many
SELECT shard_month,
    CAST(SUM(message_count) AS SIGNED) AS messages,
    CAST(COUNT(*) AS SIGNED) AS topics,
    CAST(SUM(topic LIKE 'grp\_%') AS SIGNED) AS group_topics,
    CAST(MIN(min_created_at) AS DATETIME(3)) AS first_at,
    CAST(MAX(max_created_at) AS DATETIME(3)) AS last_at
FROM im_group_message_topic_shards
GROUP BY shard_month
ORDER BY shard_month;

-- name: CountUsers :one
SELECT COUNT(*) FROM t_users;

-- name: CountGroups :one
SELECT COUNT(*) FROM t_groups;

-- Ownership transfer (adapters/mysql/social.go): the group row is locked first, so concurrent
-- transfers of one group run one after another and the second sees the new owner.
-- name: LockGroupOwner :one
SELECT owner_id, conversation_id FROM t_groups WHERE group_id = ? FOR UPDATE;

-- name: SetGroupOwner :exec
UPDATE t_groups SET owner_id = ?, updated_at = ? WHERE group_id = ?;
