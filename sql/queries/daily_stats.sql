-- The daily summary (0005): added to by the aggregator, read by the admin statistics.

-- One statement per day and flush: the counts were summed in memory since the last one.
-- name: AddDailyStats :exec
INSERT INTO t_daily_stats (day, messages, group_messages, p2p_messages, updated_at)
VALUES (?, ?, ?, ?, ?)
ON DUPLICATE KEY UPDATE
    messages = messages + VALUES(messages),
    group_messages = group_messages + VALUES(group_messages),
    p2p_messages = p2p_messages + VALUES(p2p_messages),
    updated_at = VALUES(updated_at);

-- Newest first, so LIMIT keeps the most recent days; the adapter returns them ascending.
-- name: DailyStatsBetween :many
SELECT day, messages, group_messages, p2p_messages FROM t_daily_stats
WHERE day BETWEEN sqlc.arg(from_day) AND sqlc.arg(to_day)
ORDER BY day DESC
LIMIT ?;
