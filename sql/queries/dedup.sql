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
-- One table, each row named by its primary key (an equality group per row, OR'ed), read by
-- PRIMARY range lookups, so only the batch's rows are locked: a young table scanned and locked
-- whole deadlocked with the group commit's inserts, and with a few keys of one topic the
-- optimizer would take the topic's secondary index, a range over all its records (hence the
-- FORCE INDEX). Not a multi-table UPDATE over a derived table of the keys: MariaDB 10.11 builds
-- a temporary table for that form and crashed on it under load (signal 11 in create_tmp_table
-- under multi_update::initialize_tables).
-- name: MarkDedupQueued :exec
UPDATE im_group_message_dedup FORCE INDEX (PRIMARY) SET status = 'queued'
WHERE /*ROW*/(topic = sqlc.arg(topic) AND from_user = sqlc.arg(from_user) AND client_msg_id = sqlc.arg(client_msg_id));
