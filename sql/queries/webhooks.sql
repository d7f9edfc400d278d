-- Event webhook endpoints (0013).

-- name: InsertWebhookEndpoint :exec
INSERT INTO t_webhook_endpoints (id, url, description, events, enabled, secret, created_at, updated_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?);

-- name: WebhookEndpoint :one
SELECT * FROM t_webhook_endpoints WHERE id = ?;

-- name: WebhookEndpoints :many
SELECT * FROM t_webhook_endpoints ORDER BY id;

-- name: UpdateWebhookEndpoint :execrows
UPDATE t_webhook_endpoints
SET url = ?, description = ?, events = ?, enabled = ?, secret = ?, updated_at = ?
WHERE id = ?;

-- name: DeleteWebhookEndpoint :execrows
DELETE FROM t_webhook_endpoints WHERE id = ?;
