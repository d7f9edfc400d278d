-- Users, friends and groups (DESIGN §3).

-- Creating a known user again updates the nickname: user sync is idempotent.
-- name: UpsertUser :exec
INSERT INTO t_users (user_id, nickname, created_at, updated_at)
VALUES (?, ?, ?, ?)
ON DUPLICATE KEY UPDATE nickname = VALUES(nickname), updated_at = VALUES(updated_at);

-- A deleted user (status 3) no longer exists; a disabled one (2) does.
-- name: UserExists :one
SELECT EXISTS(SELECT 1 FROM t_users WHERE user_id = ? AND status <> 3) AS found;

-- name: UserStatus :one
SELECT status FROM t_users WHERE user_id = ?;

-- A deleted user stays deleted: the guard makes the update a no-op (0 rows), which the
-- adapter tells apart from an unchanged status by reading the status.
-- name: SetUserStatus :execrows
UPDATE t_users SET status = ?, updated_at = ? WHERE user_id = ? AND status <> 3;

-- name: AddFriendship :execrows
INSERT INTO t_friendships (user_small, user_big, created_at)
VALUES (?, ?, ?)
ON DUPLICATE KEY UPDATE user_small = user_small;

-- name: AreFriends :one
SELECT EXISTS(SELECT 1 FROM t_friendships WHERE user_small = ? AND user_big = ?) AS friends;

-- name: InsertGroup :exec
INSERT INTO t_groups (group_id, owner_id, name, conversation_id, created_at, updated_at)
VALUES (?, ?, ?, ?, ?, ?);
