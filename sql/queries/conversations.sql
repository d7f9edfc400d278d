-- Conversations, P2P pairs and members (seed 003 §10.2). /*ROW*/ groups repeat per batch row,
-- see month_messages.sql.

-- name: InsertConversation :exec
INSERT INTO t_conversations (id, type, topic, group_id, last_msg_at, created_at)
VALUES (?, ?, ?, ?, ?, ?);

-- name: ConversationByTopic :one
SELECT * FROM t_conversations WHERE topic = ?;

-- name: ConversationByID :one
SELECT * FROM t_conversations WHERE id = ?;

-- Moves each conversation's last message forward, never back: batches of two months may
-- commit in either order. The batch drives the join by primary key, so that a young table is
-- not scanned and locked whole (see MarkDedupQueued).
-- name: AdvanceConversations :exec
UPDATE (/*ROW*/(SELECT
    CAST(sqlc.arg(id) AS SIGNED) AS id,
    CAST(sqlc.arg(last_seq) AS SIGNED) AS last_seq,
    CAST(sqlc.arg(last_msg_id) AS SIGNED) AS last_msg_id,
    CAST(sqlc.arg(last_msg_at) AS DATETIME(3)) AS last_msg_at)) AS v
STRAIGHT_JOIN t_conversations AS c FORCE INDEX (PRIMARY) ON v.id = c.id
SET c.last_msg_id = IF(v.last_seq > c.last_seq, v.last_msg_id, c.last_msg_id),
    c.last_msg_at = IF(v.last_seq > c.last_seq, v.last_msg_at, c.last_msg_at),
    c.last_seq = GREATEST(c.last_seq, v.last_seq);

-- name: ClaimP2P :exec
INSERT INTO t_p2p_conversations (user_small, user_big, conversation_id)
VALUES (?, ?, ?)
ON DUPLICATE KEY UPDATE conversation_id = conversation_id;

-- name: P2PConversationID :one
SELECT conversation_id FROM t_p2p_conversations WHERE user_small = ? AND user_big = ?;

-- name: AddMember :execrows
INSERT INTO t_conversation_members (conversation_id, user_id, joined_at, role)
VALUES (?, ?, ?, ?)
ON DUPLICATE KEY UPDATE user_id = user_id;

-- name: ConversationMembers :many
SELECT user_id FROM t_conversation_members WHERE conversation_id = ? ORDER BY user_id;

-- name: IsConversationMember :one
SELECT EXISTS(
    SELECT 1 FROM t_conversation_members WHERE conversation_id = ? AND user_id = ?
) AS member;
