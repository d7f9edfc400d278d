-- The token deny-list (0006), read by every AUTH and by HTTP checks the node does not remember.

-- A token revoked twice keeps the later expiry.
-- name: RevokeToken :exec
INSERT INTO im_revoked_tokens (token_id, expires_at) VALUES (?, ?)
ON DUPLICATE KEY UPDATE expires_at = GREATEST(expires_at, VALUES(expires_at));

-- The cut-off only moves forward: an older revocation replayed late re-admits nothing.
-- name: RaiseUserTokenCutoff :exec
INSERT INTO im_user_token_cutoffs (user_id, cutoff_at, expires_at) VALUES (?, ?, ?)
ON DUPLICATE KEY UPDATE
    cutoff_at = GREATEST(cutoff_at, VALUES(cutoff_at)),
    expires_at = GREATEST(expires_at, VALUES(expires_at));

-- name: TokenRevoked :one
SELECT COUNT(*) FROM im_revoked_tokens WHERE token_id = ? AND expires_at > sqlc.arg(now);

-- name: UserTokenCutoff :many
SELECT cutoff_at FROM im_user_token_cutoffs WHERE user_id = ? AND expires_at > sqlc.arg(now);

-- name: PurgeRevokedTokens :exec
DELETE FROM im_revoked_tokens WHERE expires_at <= sqlc.arg(now) LIMIT ?;

-- name: PurgeUserTokenCutoffs :exec
DELETE FROM im_user_token_cutoffs WHERE expires_at <= sqlc.arg(now) LIMIT ?;
