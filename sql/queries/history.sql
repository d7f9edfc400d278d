-- Queries of core/usecase/history beyond paging (seed 000 §6). The month-table ones name the template
-- im_group_messages_tpl like month_messages.sql; the adapter sends them to one month's table.

-- The viewer's deleted ranges [low, hi) that intersect seqs [from_seq, to_seq], so a page served
-- from the Redis hot cache hides what the month-table pages hide by joining im_dellog.
-- name: HiddenRanges :many
SELECT low, hi FROM im_dellog
WHERE topic = sqlc.arg(topic) AND deletedfor = sqlc.arg(viewer)
    AND low <= sqlc.arg(to_seq) AND hi > sqlc.arg(from_seq);

-- Short-term search of one month (seed 000 §6.6), newest first. pattern is a LIKE pattern whose
-- wildcards in the user's text were escaped with '!'. Without a topic nothing narrows the scan
-- but the created_at range: an admin tool, bounded by the three months the core allows.
-- name: SearchMonth :many
SELECT * FROM im_group_messages_tpl
WHERE created_at >= sqlc.arg(from_time) AND created_at < sqlc.arg(to_time)
    AND status = 'normal' AND content LIKE sqlc.arg(pattern) ESCAPE '!'
ORDER BY created_at DESC, seqid DESC, message_id DESC
LIMIT ?;

-- name: SearchTopicMonth :many
SELECT * FROM im_group_messages_tpl
WHERE topic = sqlc.arg(topic) AND created_at >= sqlc.arg(from_time) AND created_at < sqlc.arg(to_time)
    AND status = 'normal' AND content LIKE sqlc.arg(pattern) ESCAPE '!'
ORDER BY created_at DESC, seqid DESC, message_id DESC
LIMIT ?;
