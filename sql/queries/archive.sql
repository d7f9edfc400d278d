-- Archive export and restore of whole month tables (seed 000 §10). The month-table queries
-- name the template im_group_messages_tpl, like month_messages.sql; the adapter sends them to
-- one month's table. /*ROW*/ groups repeat per batch row.

-- name: ArchiveRows :many
SELECT * FROM im_group_messages_tpl
WHERE topic = sqlc.arg(topic) AND seqid > sqlc.arg(after)
ORDER BY seqid
LIMIT ?;

-- name: CountMonthRows :one
SELECT COUNT(*) FROM im_group_messages_tpl;

-- Every column, so a restored row equals the archived one; a row already there is kept.
-- name: RestoreRows :exec
INSERT IGNORE INTO im_group_messages_tpl (
    message_id, topic, group_id, conversation_id, seqid, from_user, client_msg_id, msg_type,
    status, content, head, mentioned_user_ids, mention_all, reply_seqid, root_seqid, file_count,
    content_size, has_risk, audit_status, version, recalled_at, recalled_by, edited_at,
    deleted_at, expires_at, created_at, updated_at
) VALUES /*ROW*/(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?);

-- Retention purge (seed 000 §3.3 rule 5): the month's mirror rows and catalog row go.
-- name: DeleteMirrorRow :exec
DELETE FROM im_group_message_topic_shards WHERE topic = ? AND shard_month = ?;

-- name: UnregisterMonth :exec
DELETE FROM im_group_message_shards WHERE shard_month = ?;
