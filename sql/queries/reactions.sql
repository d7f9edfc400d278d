-- Reactions and pins by topic + seq (issue 31, DESIGN §3.1).

-- Locks the message's reactions, and the gap where new ones would go, for the rest of an
-- add: the limits are checked against what no other add can change meanwhile.
-- name: LockReactions :many
SELECT emoji, user_id, created_at FROM im_reactions WHERE topic = ? AND seqid = ? FOR UPDATE;

-- name: InsertReaction :exec
INSERT INTO im_reactions (topic, seqid, emoji, user_id, created_at) VALUES (?, ?, ?, ?, ?);

-- name: DeleteReaction :execrows
DELETE FROM im_reactions WHERE topic = ? AND seqid = ? AND emoji = ? AND user_id = ?;

-- One page's summaries in one read: per message and emoji the count and whether the viewer is
-- among them, emojis in the order they were first used.
-- name: ReactionSummaries :many
SELECT seqid, emoji, COUNT(*) AS reactions, CAST(MAX(user_id = sqlc.arg(viewer)) AS SIGNED) AS mine
FROM im_reactions
WHERE topic = sqlc.arg(topic) AND seqid IN (sqlc.slice(seqs))
GROUP BY seqid, emoji
ORDER BY seqid, MIN(created_at), emoji;

-- name: Reactors :many
SELECT * FROM im_reactions WHERE topic = ? AND seqid = ? ORDER BY created_at, user_id, emoji LIMIT ?;

-- name: LockPins :many
SELECT * FROM im_pins WHERE topic = ? FOR UPDATE;

-- name: InsertPin :exec
INSERT INTO im_pins (topic, seqid, pinned_by, created_at) VALUES (?, ?, ?, ?);

-- name: DeletePin :execrows
DELETE FROM im_pins WHERE topic = ? AND seqid = ?;

-- name: PinsOf :many
SELECT * FROM im_pins WHERE topic = ? ORDER BY created_at DESC, seqid DESC;
