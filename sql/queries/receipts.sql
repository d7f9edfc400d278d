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
-- nothing. /*ROW*/ groups repeat per batch row (see month_messages.sql): the acks that meet in
-- flight go in one statement (issue 30 part 4), driven by the batch's keys through the unique
-- key, as AdvanceConversations does by primary key.
-- name: RaiseDelivered :exec
UPDATE (/*ROW*/(SELECT
    CAST(sqlc.arg(conversation_id) AS SIGNED) AS conversation_id,
    CAST(sqlc.arg(user_id) AS SIGNED) AS user_id,
    CAST(sqlc.arg(seq) AS SIGNED) AS seq)) AS v
STRAIGHT_JOIN t_conversation_members AS m FORCE INDEX (uk_conversation_members)
    ON m.conversation_id = v.conversation_id AND m.user_id = v.user_id
SET m.delivered_seq = GREATEST(m.delivered_seq, v.seq);

-- A message read was delivered too, whether or not its ack was counted.
-- name: DeliveredSeq :one
SELECT CAST(GREATEST(delivered_seq, last_read_seq) AS SIGNED) AS delivered FROM t_conversation_members
WHERE conversation_id = ? AND user_id = ?;

-- The same for several members at once, by the unique key (conversation_id, user_id): the
-- native push's ack wait reads the users of one message together (issue 32).
-- name: DeliveredSeqs :many
SELECT user_id, CAST(GREATEST(delivered_seq, last_read_seq) AS SIGNED) AS delivered FROM t_conversation_members
WHERE conversation_id = sqlc.arg(conversation_id) AND user_id IN (sqlc.slice(user_ids));
