-- Month-table catalog (seed 000 §3.2, §4).

-- Registers a month as prepared; an existing row keeps its state.
-- name: RegisterMonth :exec
INSERT INTO im_group_message_shards (shard_month, table_name, shard_start, shard_end, status)
VALUES (?, ?, ?, ?, 'prepared')
ON DUPLICATE KEY UPDATE shard_month = shard_month;

-- name: RegisteredMonths :many
SELECT shard_month FROM im_group_message_shards;

-- The states and switch instants of a month and of every later one, under a shared lock, so
-- a state change (sealing → sealed) or a recorded switch waits for a batch being written.
-- name: MonthStatesForWrite :many
SELECT shard_month, status, active_since FROM im_group_message_shards WHERE shard_month >= ? ORDER BY shard_month LOCK IN SHARE MODE;

-- name: MonthState :one
SELECT status FROM im_group_message_shards WHERE shard_month = ?;

-- name: SetMonthState :execrows
UPDATE im_group_message_shards SET status = sqlc.arg(to_status)
WHERE shard_month = sqlc.arg(shard_month) AND status = sqlc.arg(from_status);

-- The earliest record of a switch stands (ports.ShardStore.RecordSwitch).
-- name: RecordMonthSwitch :exec
UPDATE im_group_message_shards SET active_since = sqlc.arg(active_since)
WHERE shard_month = sqlc.arg(shard_month) AND (active_since IS NULL OR active_since > sqlc.arg(active_since));

-- name: Catalog :many
SELECT * FROM im_group_message_shards ORDER BY shard_month;

-- Row counts come from the route mirror, never COUNT(*) on month tables (seed 000 §6.6).
-- name: MonthStats :many
SELECT shard_month,
    CAST(SUM(message_count) AS SIGNED) AS row_count,
    CAST(MIN(min_created_at) AS DATETIME(3)) AS min_created_at,
    CAST(MAX(max_created_at) AS DATETIME(3)) AS max_created_at
FROM im_group_message_topic_shards
GROUP BY shard_month;
