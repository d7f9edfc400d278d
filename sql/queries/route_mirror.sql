-- Route mirror (seed 000 §3.4). /*ROW*/ groups repeat per batch row, see month_messages.sql.

-- The seed 000 §5.2 upsert, one row per topic of a batch.
-- name: UpsertTopicShards :exec
INSERT INTO im_group_message_topic_shards (
    topic, shard_month, min_seq, max_seq, message_count, min_created_at, max_created_at
) VALUES /*ROW*/(?, ?, ?, ?, ?, ?, ?)
ON DUPLICATE KEY UPDATE
    min_seq = LEAST(min_seq, VALUES(min_seq)),
    max_seq = GREATEST(max_seq, VALUES(max_seq)),
    message_count = message_count + VALUES(message_count),
    min_created_at = LEAST(min_created_at, VALUES(min_created_at)),
    max_created_at = GREATEST(max_created_at, VALUES(max_created_at));

-- Locking read: it waits for another month's writer that holds a row of the same topic, so
-- two months can never commit overlapping ranges unseen (seed 000 §12.15).
-- name: LockTopicShards :many
SELECT topic, shard_month, min_seq, max_seq
FROM im_group_message_topic_shards
WHERE topic IN (sqlc.slice('topics'))
FOR UPDATE;

-- name: TopicShards :many
SELECT * FROM im_group_message_topic_shards WHERE topic = ? ORDER BY min_seq, shard_month;

-- name: TopicMaxSeq :one
SELECT CAST(COALESCE(MAX(max_seq), 0) AS SIGNED) AS max_seq FROM im_group_message_topic_shards WHERE topic = ?;
