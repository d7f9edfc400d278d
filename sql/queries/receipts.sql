-- Read receipts (0012, issue 31): a message's readers are the members whose read watermark
-- reached its seq, read off idx_conversation_read (conversation_id, last_read_seq) as one
-- range; members who hide receipts are left out.

-- name: CountReaders :one
SELECT COUNT(*) FROM t_conversation_members m
LEFT JOIN t_user_settings s ON s.user_id = m.user_id
WHERE m.conversation_id = ? AND m.last_read_seq >= ? AND m.user_id <> ?
  AND COALESCE(s.hide_receipts, 0) = 0;

-- name: ListReaders :many
SELECT m.user_id FROM t_conversation_members m
LEFT JOIN t_user_settings s ON s.user_id = m.user_id
WHERE m.conversation_id = ? AND m.last_read_seq >= ? AND m.user_id <> ?
  AND COALESCE(s.hide_receipts, 0) = 0
ORDER BY m.user_id
LIMIT ?;

-- name: CountMembers :one
SELECT COUNT(*) FROM t_conversation_members WHERE conversation_id = ? AND user_id <> ?;

-- The delivered watermark (0017) only moves forward: a late ack of an older message changes
-- nothing.
-- name: RaiseDelivered :exec
UPDATE t_conversation_members SET delivered_seq = CAST(sqlc.arg(seq) AS SIGNED)
WHERE conversation_id = sqlc.arg(conversation_id) AND user_id = sqlc.arg(user_id)
  AND delivered_seq < CAST(sqlc.arg(seq) AS SIGNED);

-- A message read was delivered too, whether or not its ack was counted.
-- name: DeliveredSeq :one
SELECT CAST(GREATEST(delivered_seq, last_read_seq) AS SIGNED) AS delivered FROM t_conversation_members
WHERE conversation_id = ? AND user_id = ?;
