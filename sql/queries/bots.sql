-- Bot accounts (0016).

-- name: InsertBot :exec
INSERT INTO t_bots (user_id, name, created_at) VALUES (?, ?, ?);

-- name: Bot :one
SELECT * FROM t_bots WHERE user_id = ?;

-- name: Bots :many
SELECT * FROM t_bots ORDER BY user_id;

-- name: DeleteBot :execrows
DELETE FROM t_bots WHERE user_id = ?;
