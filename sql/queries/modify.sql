-- Recall, edit and delete (seed 000 §7). The month-table queries name the template
-- im_group_messages_tpl like month_messages.sql; the adapter sends them to the message's month.

-- Locks the message for the rest of the change's transaction.
-- name: LockMessage :one
SELECT * FROM im_group_messages_tpl WHERE topic = ? AND seqid = ? FOR UPDATE;

-- Writes the mutable part of a message. head is a summary derived from content, so any change
-- of content drops it.
-- name: UpdateMessageState :exec
UPDATE im_group_messages_tpl
SET status = ?, content = ?, head = NULL, content_size = ?, version = ?, edited_at = ?,
    recalled_at = ?, recalled_by = ?, deleted_at = ?, updated_at = ?
WHERE topic = ? AND seqid = ?;

-- name: InsertRevision :exec
INSERT INTO im_message_revisions (
    topic, shard_month, seqid, message_id, version, editor, action, old_content, new_content, created_at
) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?);

-- name: InsertDellog :exec
INSERT INTO im_dellog (topic, deletedfor, low, hi) VALUES (?, ?, ?, ?);

-- name: GroupOwner :one
SELECT owner_id FROM t_groups WHERE group_id = ?;
