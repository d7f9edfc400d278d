-- Presence (0010, issue 31): last_seen and the users' settings.

-- last_seen never moves back: two nodes telling of one user's change in either order agree.
-- name: RaiseLastSeen :exec
INSERT INTO t_user_last_seen (user_id, last_seen) VALUES (?, ?)
ON DUPLICATE KEY UPDATE last_seen = GREATEST(last_seen, VALUES(last_seen));

-- name: LastSeenOf :many
SELECT user_id, last_seen FROM t_user_last_seen WHERE user_id IN (sqlc.slice(users));

-- name: HiddenOf :many
SELECT user_id FROM t_user_settings WHERE hide_presence = 1 AND user_id IN (sqlc.slice(users));

-- name: UserSettings :one
SELECT hide_presence, hide_receipts FROM t_user_settings WHERE user_id = ?;

-- A change names only the settings it changes; the others stay as stored, in one statement, so
-- two changes of different settings never undo each other (issue 31).
-- name: ChangeUserSettings :exec
INSERT INTO t_user_settings (user_id, hide_presence, hide_receipts)
VALUES (sqlc.arg(user_id), COALESCE(sqlc.narg(hide_presence), 0), COALESCE(sqlc.narg(hide_receipts), 0))
ON DUPLICATE KEY UPDATE
  hide_presence = COALESCE(sqlc.narg(hide_presence), hide_presence),
  hide_receipts = COALESCE(sqlc.narg(hide_receipts), hide_receipts);
