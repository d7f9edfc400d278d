-- Shard lifecycle upkeep (seed 000 §3.4 rule 4, §3.5, §6.6): tenant-wide route rebuild and
-- sampled reconciliation over the route mirror, dedup TTL cleanup, catalog statistics.

-- Keyset paging over the mirror's topics: the primary key (topic, shard_month) serves it.
-- name: MirrorTopics :many
SELECT DISTINCT topic FROM im_group_message_topic_shards
WHERE topic > sqlc.arg(after)
ORDER BY topic
LIMIT ?;

-- The same within one month, through idx_month_topic.
-- name: MirrorTopicsIn :many
SELECT topic FROM im_group_message_topic_shards
WHERE shard_month = sqlc.arg(shard_month) AND topic > sqlc.arg(after)
ORDER BY topic
LIMIT ?;

-- The same, only topics with a message at or after a time: idx_month_topic, filtering every
-- row of the month on max_created_at (a rare walk: after a Redis failover, DESIGN §5).
-- name: MirrorTopicsSince :many
SELECT topic FROM im_group_message_topic_shards
WHERE shard_month = sqlc.arg(shard_month) AND topic > sqlc.arg(after) AND max_created_at >= sqlc.arg(since)
ORDER BY topic
LIMIT ?;

-- A topic's real range in one month table (rewritten from the template like every month-table
-- query). No row when the table holds none of the topic.
-- name: TableSegment :one
SELECT CAST(MIN(seqid) AS SIGNED) AS min_seq,
    CAST(MAX(seqid) AS SIGNED) AS max_seq,
    CAST(COUNT(*) AS SIGNED) AS row_count,
    CAST(MIN(created_at) AS DATETIME(3)) AS min_created_at,
    CAST(MAX(created_at) AS DATETIME(3)) AS max_created_at
FROM im_group_messages_tpl
WHERE topic = ?
HAVING COUNT(*) > 0;

-- Overwrites one mirror row with exact values (a recount), unlike the additive batch upsert.
-- name: SetTopicShard :exec
INSERT INTO im_group_message_topic_shards (
    topic, shard_month, min_seq, max_seq, message_count, min_created_at, max_created_at
) VALUES (?, ?, ?, ?, ?, ?, ?)
ON DUPLICATE KEY UPDATE
    min_seq = VALUES(min_seq),
    max_seq = VALUES(max_seq),
    message_count = VALUES(message_count),
    min_created_at = VALUES(min_created_at),
    max_created_at = VALUES(max_created_at);

-- name: DeleteTopicShard :exec
DELETE FROM im_group_message_topic_shards WHERE topic = ? AND shard_month = ?;

-- Small batches in expiry order through idx_expires, so the cleanup never holds many locks.
-- name: PurgeExpiredDedup :execrows
DELETE FROM im_group_message_dedup
WHERE expires_at < sqlc.arg(now)
ORDER BY expires_at
LIMIT ?;

-- Copies a month's statistics from the route mirror into its catalog row; the month table is
-- never counted.
-- name: RefreshMonthStats :exec
UPDATE im_group_message_shards AS s
LEFT JOIN (
    SELECT ts.shard_month,
        CAST(SUM(ts.message_count) AS SIGNED) AS row_count,
        MIN(ts.min_created_at) AS min_created_at,
        MAX(ts.max_created_at) AS max_created_at
    FROM im_group_message_topic_shards AS ts
    WHERE ts.shard_month = sqlc.arg(month)
    GROUP BY ts.shard_month
) AS t ON t.shard_month = s.shard_month
SET s.row_count = COALESCE(t.row_count, 0),
    s.min_created_at = t.min_created_at,
    s.max_created_at = t.max_created_at
WHERE s.shard_month = sqlc.arg(month);
