-- Native push tokens and dead letters (0015).

-- name: UpsertPushToken :exec
INSERT INTO t_push_tokens (user_id, device_id, platform, app_id, token, locale, updated_at)
VALUES (?, ?, ?, ?, ?, ?, ?)
ON DUPLICATE KEY UPDATE platform = VALUES(platform), app_id = VALUES(app_id), token = VALUES(token),
    locale = VALUES(locale), updated_at = VALUES(updated_at);

-- name: DeletePushToken :execrows
DELETE FROM t_push_tokens WHERE user_id = ? AND device_id = ?;

-- name: DeletePushTokenValue :execrows
DELETE FROM t_push_tokens WHERE platform = ? AND token = ?;

-- name: PushTokensOfUsers :many
SELECT * FROM t_push_tokens WHERE user_id IN (sqlc.slice(users)) ORDER BY user_id, device_id;

-- name: UsersWithPushTokens :many
SELECT DISTINCT user_id FROM t_push_tokens WHERE updated_at >= ? ORDER BY user_id;

-- name: InsertPushDeadLetter :exec
INSERT INTO t_push_dead_letters (provider, user_id, device_id, msg_id, attempts, last_error, created_at)
VALUES (?, ?, ?, ?, ?, ?, ?);

-- name: PushDeadLetters :many
SELECT * FROM t_push_dead_letters WHERE provider = ? ORDER BY id DESC LIMIT ?;
