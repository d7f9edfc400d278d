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

-- The topics of a month whose mirror row may hide a seq hole: fewer rows than seqs in its
-- range, or a first seq that does not follow the topic's previous segment (idx_topic_max_seq).
-- name: HoleSuspects :many
SELECT s.topic FROM im_group_message_topic_shards AS s
WHERE s.shard_month = sqlc.arg(shard_month) AND s.topic > sqlc.arg(after)
  AND (s.message_count < s.max_seq - s.min_seq + 1
    OR (s.min_seq > 1 AND NOT EXISTS (
      SELECT 1 FROM im_group_message_topic_shards AS p WHERE p.topic = s.topic AND p.max_seq = s.min_seq - 1)))
ORDER BY s.topic
LIMIT ?;
