-- Read watermarks and the MySQL side of conversation lists (seed 003 §11, §14).

-- The watermark only moves forward by seq, and msg_id moves with the seq it belongs to, so the
-- pair always names one message (msg_ids are not ordered like seqs). last_read_msg_id is
-- assigned first: MySQL and MariaDB evaluate SET left to right, so it still compares against
-- the old last_read_seq.
-- name: AdvanceReadWatermark :exec
UPDATE t_conversation_members
SET last_read_msg_id = IF(CAST(sqlc.arg(seq) AS SIGNED) > last_read_seq, CAST(sqlc.arg(msg_id) AS SIGNED), last_read_msg_id),
    last_read_seq = GREATEST(last_read_seq, CAST(sqlc.arg(seq) AS SIGNED))
WHERE conversation_id = sqlc.arg(conversation_id) AND user_id = sqlc.arg(user_id);

-- name: LockReadWatermark :one
SELECT last_read_seq, last_read_msg_id FROM t_conversation_members
WHERE conversation_id = ? AND user_id = ?
FOR UPDATE;

-- name: MemberStates :many
SELECT c.id, c.topic, c.last_seq, c.last_msg_id, c.last_msg_at, m.last_read_seq, m.last_read_msg_id, m.muted
FROM t_conversation_members AS m
JOIN t_conversations AS c ON c.id = m.conversation_id
WHERE m.user_id = sqlc.arg(user_id) AND m.conversation_id IN (sqlc.slice(conversation_ids));

-- Conversations without any message have no place in a list.
-- name: AllMemberStates :many
SELECT c.id, c.topic, c.last_seq, c.last_msg_id, c.last_msg_at, m.last_read_seq, m.last_read_msg_id, m.muted
FROM t_conversation_members AS m
JOIN t_conversations AS c ON c.id = m.conversation_id
WHERE m.user_id = ? AND c.last_seq > 0
ORDER BY c.id;

-- name: SetMemberMuted :exec
UPDATE t_conversation_members SET muted = ? WHERE conversation_id = ? AND user_id = ?;
