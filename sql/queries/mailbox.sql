-- Mailbox events and device sync cursors (seed 003 §10.3). /*ROW*/ groups repeat per batch row,
-- see month_messages.sql.
--
-- Each user has one mailbox sequence across devices. Its head is the cursor row of device 0,
-- which no real device uses (AUTH refuses device 0): appending locks the heads of the users
-- involved, in user order, so one user's seqs commit in order and a reader's cursor never
-- passes a seq still to commit.

-- name: EnsureMailboxHeads :exec
INSERT INTO t_device_sync_cursors (user_id, device_id, mailbox_seq, dialog_score, updated_at)
VALUES /*ROW*/(?, 0, 0, 0, ?)
ON DUPLICATE KEY UPDATE user_id = user_id;

-- name: LockMailboxHeads :many
SELECT user_id, mailbox_seq FROM t_device_sync_cursors
WHERE device_id = 0 AND user_id IN (sqlc.slice(user_ids))
ORDER BY user_id
FOR UPDATE;

-- name: SetMailboxHeads :exec
INSERT INTO t_device_sync_cursors (user_id, device_id, mailbox_seq, dialog_score, updated_at)
VALUES /*ROW*/(?, 0, ?, 0, ?)
ON DUPLICATE KEY UPDATE mailbox_seq = VALUES(mailbox_seq), updated_at = VALUES(updated_at);

-- name: InsertMailboxEvents :exec
INSERT INTO t_mailbox_events (id, user_id, device_id, seq, event_type, conversation_id, payload, created_at)
VALUES /*ROW*/(?, ?, ?, ?, ?, ?, ?, ?);

-- A device reads its own events and the events for all devices (device 0).
-- name: MailboxSince :many
SELECT id, user_id, device_id, seq, event_type, conversation_id, payload, created_at
FROM t_mailbox_events
WHERE user_id = sqlc.arg(user_id) AND device_id IN (0, sqlc.arg(device_id)) AND seq > sqlc.arg(after)
ORDER BY seq
LIMIT ?;

-- name: SaveSyncCursor :exec
INSERT INTO t_device_sync_cursors (user_id, device_id, mailbox_seq, dialog_score, updated_at)
VALUES (?, ?, ?, ?, ?)
ON DUPLICATE KEY UPDATE mailbox_seq = VALUES(mailbox_seq), dialog_score = VALUES(dialog_score),
    updated_at = VALUES(updated_at);

-- name: SyncCursor :one
SELECT mailbox_seq, dialog_score FROM t_device_sync_cursors WHERE user_id = ? AND device_id = ?;
