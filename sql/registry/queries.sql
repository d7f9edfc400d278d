-- Tenant registry queries (sqlc input for adapters/mysql/registrydb).

-- name: ListTenants :many
SELECT name, database_name, created_at FROM t_tenants ORDER BY name;

-- name: InsertTenant :exec
INSERT INTO t_tenants (name, database_name, created_at) VALUES (?, ?, ?);

-- name: TenantByName :one
SELECT name, database_name, created_at FROM t_tenants WHERE name = ?;
