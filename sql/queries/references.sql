-- References into messages by topic + seq (seed 000 §8): favorites and the group file index.

-- name: AddFavorite :exec
INSERT IGNORE INTO im_favorites (user_id, topic, seqid, created_at) VALUES (?, ?, ?, ?);

-- name: GetFavorite :one
SELECT * FROM im_favorites WHERE user_id = ? AND topic = ? AND seqid = ?;

-- name: RemoveFavorite :execrows
DELETE FROM im_favorites WHERE user_id = ? AND topic = ? AND seqid = ?;

-- name: FavoritesBefore :many
SELECT * FROM im_favorites WHERE user_id = ? AND id < ? ORDER BY id DESC LIMIT ?;

-- name: AddGroupFiles :exec
INSERT IGNORE INTO im_group_files (
    topic, seqid, message_id, from_user, file_name, file_size, object_key, content_type, created_at
) VALUES /*ROW*/(?, ?, ?, ?, ?, ?, ?, ?, ?);

-- name: RemoveGroupFile :exec
DELETE FROM im_group_files WHERE topic = ? AND seqid = ?;

-- name: RemoveGroupFileRange :exec
DELETE FROM im_group_files WHERE topic = sqlc.arg(topic) AND seqid >= sqlc.arg(lo) AND seqid <= sqlc.arg(hi);

-- name: GroupFilesBefore :many
SELECT * FROM im_group_files WHERE topic = ? AND seqid < ? ORDER BY seqid DESC LIMIT ?;

-- The seqs in [lo, hi] of a topic that favorites, reports and file entries name; archiving
-- checks each resolves.

-- name: FavoritedSeqs :many
SELECT DISTINCT seqid FROM im_favorites WHERE topic = sqlc.arg(topic) AND seqid >= sqlc.arg(lo) AND seqid <= sqlc.arg(hi);

-- name: ReportedSeqs :many
SELECT DISTINCT seqid FROM t_reports WHERE topic = sqlc.arg(topic) AND seqid >= sqlc.arg(lo) AND seqid <= sqlc.arg(hi);

-- name: FiledSeqs :many
SELECT seqid FROM im_group_files WHERE topic = sqlc.arg(topic) AND seqid >= sqlc.arg(lo) AND seqid <= sqlc.arg(hi);

-- Media objects and the conversations whose messages reference them (issue 33).

-- name: AddMediaRef :exec
INSERT IGNORE INTO im_media_refs (object_key, topic) VALUES (?, ?);

-- name: MediaTopics :many
SELECT topic FROM im_media_refs WHERE object_key = ? ORDER BY topic LIMIT ?;
