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

-- The unique key, forced: on a young table the optimizer scans the primary key (insertion
-- order, not user order) and locks as it goes, so two appends of disjoint users deadlocked.
-- name: LockMailboxHeads :many
SELECT user_id, mailbox_seq FROM t_device_sync_cursors FORCE INDEX (uk_user_device)
WHERE device_id = 0 AND user_id IN (sqlc.slice(user_ids))
ORDER BY user_id
FOR UPDATE;

-- The heads exist and are locked (LockMailboxHeads): an UPDATE, not an upsert, so the append
-- takes no gap lock that a new user's EnsureMailboxHeads would wait on (a deadlock when groups
-- of new users are made at once). Rows joined by the unique key, as AdvanceConversations does.
-- name: SetMailboxHeads :exec
UPDATE (/*ROW*/(SELECT
    CAST(sqlc.arg(user_id) AS SIGNED) AS user_id,
    CAST(sqlc.arg(mailbox_seq) AS SIGNED) AS mailbox_seq,
    CAST(sqlc.arg(updated_at) AS DATETIME(3)) AS updated_at)) AS v
STRAIGHT_JOIN t_device_sync_cursors AS c FORCE INDEX (uk_user_device) ON c.user_id = v.user_id AND c.device_id = 0
SET c.mailbox_seq = v.mailbox_seq, c.updated_at = v.updated_at;

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
