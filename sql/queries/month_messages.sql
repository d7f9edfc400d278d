-- Month-table queries. They name the template im_group_messages_tpl; the MySQL adapter runs them
-- through a wrapper that swaps in a catalog-registered im_group_messages_YYYYMM (DESIGN §2).
--
-- A group marked /*ROW*/ is one row of a batch: the adapter repeats it once per row (sqlc has
-- no multi-row statements for MySQL), taking the text and the argument order from this file.

-- name: InsertMessages :exec
INSERT INTO im_group_messages_tpl (
    message_id, topic, group_id, conversation_id, seqid, from_user, client_msg_id, msg_type,
    status, content, mentioned_user_ids, mention_all, reply_seqid, content_size, version,
    edited_at, deleted_at, created_at, updated_at
) VALUES /*ROW*/(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?);

-- name: GetMessage :one
SELECT * FROM im_group_messages_tpl WHERE topic = ? AND seqid = ?;

-- Pages hide the viewer's deleted ranges [low, hi) (seed 000 §6.2); viewer 0 matches no range.
-- after/before are exclusive bounds; include_deleted (0/1) also returns tombstones.

-- name: PageMessagesAsc :many
SELECT m.* FROM im_group_messages_tpl AS m
LEFT JOIN im_dellog AS d
    ON d.topic = m.topic AND d.deletedfor = sqlc.arg(viewer)
    AND m.seqid >= d.low AND m.seqid < d.hi
WHERE m.topic = sqlc.arg(topic) AND m.seqid > sqlc.arg(after) AND m.seqid < sqlc.arg(before)
    AND (m.status <> 'deleted' OR CAST(sqlc.arg(include_deleted) AS UNSIGNED) = 1)
    AND d.id IS NULL
ORDER BY m.seqid ASC
LIMIT ?;

-- name: PageMessagesDesc :many
SELECT m.* FROM im_group_messages_tpl AS m
LEFT JOIN im_dellog AS d
    ON d.topic = m.topic AND d.deletedfor = sqlc.arg(viewer)
    AND m.seqid >= d.low AND m.seqid < d.hi
WHERE m.topic = sqlc.arg(topic) AND m.seqid > sqlc.arg(after) AND m.seqid < sqlc.arg(before)
    AND (m.status <> 'deleted' OR CAST(sqlc.arg(include_deleted) AS UNSIGNED) = 1)
    AND d.id IS NULL
ORDER BY m.seqid DESC
LIMIT ?;
