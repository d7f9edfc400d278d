-- Event webhook endpoints (0013).

-- name: InsertWebhookEndpoint :exec
INSERT INTO t_webhook_endpoints (id, url, description, events, enabled, bot_id, secret, created_at, updated_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?);

-- name: WebhookEndpoint :one
SELECT * FROM t_webhook_endpoints WHERE id = ?;

-- name: WebhookEndpoints :many
SELECT * FROM t_webhook_endpoints ORDER BY id;

-- name: UpdateWebhookEndpoint :execrows
UPDATE t_webhook_endpoints
SET url = ?, description = ?, events = ?, enabled = ?, bot_id = ?, updated_at = ?
WHERE id = ?;

-- name: SetWebhookSecret :execrows
UPDATE t_webhook_endpoints SET secret = ?, updated_at = ? WHERE id = ?;

-- name: DeleteWebhookEndpoint :execrows
DELETE FROM t_webhook_endpoints WHERE id = ?;

-- Delivery progress (0014).

-- name: WebhookScanMark :one
SELECT scanned_to, replay_from FROM t_webhook_scan_marks WHERE endpoint_id = ?;

-- name: SetWebhookScanMark :exec
INSERT INTO t_webhook_scan_marks (endpoint_id, scanned_to) VALUES (?, ?)
ON DUPLICATE KEY UPDATE scanned_to = VALUES(scanned_to);

-- A replay: the scan starts again at the point, and every topic cursor goes (next query).
-- name: ReplayWebhookScanMark :exec
INSERT INTO t_webhook_scan_marks (endpoint_id, scanned_to, replay_from) VALUES (?, ?, ?)
ON DUPLICATE KEY UPDATE scanned_to = VALUES(scanned_to), replay_from = VALUES(replay_from);

-- name: DeleteWebhookTopicCursors :exec
DELETE FROM t_webhook_cursors WHERE endpoint_id = ?;

-- name: DeleteWebhookScanMark :exec
DELETE FROM t_webhook_scan_marks WHERE endpoint_id = ?;

-- name: DeleteWebhookDeadLetters :exec
DELETE FROM t_webhook_dead_letters WHERE endpoint_id = ?;

-- name: WebhookTopicCursor :one
SELECT seqid FROM t_webhook_cursors WHERE endpoint_id = ? AND topic = ?;

-- name: SetWebhookTopicCursor :exec
INSERT INTO t_webhook_cursors (endpoint_id, topic, seqid) VALUES (?, ?, ?)
ON DUPLICATE KEY UPDATE seqid = VALUES(seqid);

-- name: InsertWebhookDeadLetter :exec
INSERT INTO t_webhook_dead_letters (endpoint_id, topic, seqid, event_type, attempts, last_error, created_at)
VALUES (?, ?, ?, ?, ?, ?, ?);

-- name: WebhookDeadLetters :many
SELECT * FROM t_webhook_dead_letters WHERE endpoint_id = ? ORDER BY id LIMIT ?;

-- The edits and recalls after a webhook endpoint's revision cursor (issue 32 part 2): written
-- in the transaction of the change itself, read in id order, only once older than the settle
-- window so an id allocated earlier and committed later is not passed over.
-- name: WebhookRevisions :many
SELECT id, topic, seqid, message_id, version, editor, action, new_content, created_at
FROM im_message_revisions
WHERE id > ? AND created_at >= ? AND created_at < ? AND action IN ('edit', 'recall')
ORDER BY id
LIMIT ?;

-- The id of the first revision made in [from, until), 0 when none: where the read of an
-- endpoint with no revision cursor yet (a new or replayed one) starts, so it does not walk every
-- revision made before it. MIN over a range of idx_created (0016: created_at, and the primary
-- key InnoDB appends) reads only the window's index entries; the action is left out, as it is
-- not in that index: a delete found first only starts the read a little earlier (issue 32
-- part 2 "Edits and recalls").
-- name: FirstWebhookRevision :one
SELECT CAST(COALESCE(MIN(id), 0) AS SIGNED) AS id
FROM im_message_revisions
WHERE created_at >= ? AND created_at < ?;

-- A member, friendship or report event, written in the transaction of its change (issue 32
-- part 2 "Member, friendship and report events").
-- name: InsertWebhookEvent :exec
INSERT INTO t_webhook_events (type, topic, data, created_at) VALUES (?, ?, ?, ?);

-- The recorded events after a webhook endpoint's event cursor, read like the revisions.
-- name: WebhookEvents :many
SELECT id, type, topic, data, created_at
FROM t_webhook_events
WHERE id > ? AND created_at >= ? AND created_at < ?
ORDER BY id
LIMIT ?;

-- The id of the first recorded event made in [from, until), 0 when none: where the read of an
-- endpoint with no event cursor yet (a new or replayed one) starts, so it does not walk every
-- record made before it. MIN over a range of idx_created (created_at, and
-- the primary key InnoDB appends) reads only the window's index entries (issue 32 part 2
-- "Member, friendship and report events").
-- name: FirstWebhookEvent :one
SELECT CAST(COALESCE(MIN(id), 0) AS SIGNED) AS id
FROM t_webhook_events
WHERE created_at >= ? AND created_at < ?;

-- The events older than webhooks.keep_events, a batch at a time, below the first one an
-- enabled endpoint has not passed yet (issue 32 part 2 "Member, friendship and report events").
-- name: DeleteWebhookEventsBefore :execrows
DELETE FROM t_webhook_events WHERE created_at < ? AND id < ? ORDER BY id LIMIT ?;
