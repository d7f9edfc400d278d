-- Cross-month idempotency records (seed 000 §3.5). /*ROW*/ groups repeat per batch row, see
-- month_messages.sql.

-- Joins the batch's keys as a derived table: MariaDB plans an OR of hundreds of key
-- conjunctions in ~100 ms, while the join is a primary-key lookup per key. The casts take the
-- connection collation, which the adapter sets to the tables' utf8mb4_unicode_ci.
-- name: LockDedup :many
SELECT d.topic, d.from_user, d.client_msg_id, d.seqid, d.shard_month, d.message_id, d.payload_hash, d.status
FROM (/*ROW*/(SELECT
    CAST(sqlc.arg(topic) AS CHAR(64)) AS topic,
    CAST(sqlc.arg(from_user) AS SIGNED) AS from_user,
    CAST(sqlc.arg(client_msg_id) AS CHAR(64)) AS client_msg_id)) AS k
JOIN im_group_message_dedup AS d
    ON d.topic = k.topic AND d.from_user = k.from_user AND d.client_msg_id = k.client_msg_id
FOR UPDATE;

-- name: InsertDedup :exec
INSERT INTO im_group_message_dedup (
    topic, from_user, client_msg_id, seqid, shard_month, message_id, payload_hash, status, expires_at
) VALUES /*ROW*/(?, ?, ?, ?, ?, ?, ?, ?, ?);

-- A record's status goes 'stored' (COMMIT) → 'queued' once the send that stored it, or a
-- resend, queued its deliver job: a resend of a queued message queues nothing (issue 19).
-- The keys drive the join and each record is found by its primary key: on a young table the
-- optimizer would otherwise scan the dedup table first, lock every row, and deadlock with the
-- group commit's inserts.
-- name: MarkDedupQueued :exec
UPDATE (/*ROW*/(SELECT
    CAST(sqlc.arg(topic) AS CHAR(64)) AS topic,
    CAST(sqlc.arg(from_user) AS SIGNED) AS from_user,
    CAST(sqlc.arg(client_msg_id) AS CHAR(64)) AS client_msg_id)) AS k
STRAIGHT_JOIN im_group_message_dedup AS d FORCE INDEX (PRIMARY)
    ON d.topic = k.topic AND d.from_user = k.from_user AND d.client_msg_id = k.client_msg_id
SET d.status = 'queued';
