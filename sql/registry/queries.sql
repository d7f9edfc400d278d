-- Tenant registry queries (sqlc input for adapters/mysql/registrydb).

-- name: ListTenants :many
SELECT t.name, t.database_name, t.created_at, COALESCE(s.dsn, '') AS dsn
FROM t_tenants t LEFT JOIN t_tenant_servers s ON s.name = t.name
ORDER BY t.name;

-- name: InsertTenant :exec
INSERT INTO t_tenants (name, database_name, created_at) VALUES (?, ?, ?);

-- name: InsertTenantServer :exec
INSERT INTO t_tenant_servers (name, dsn) VALUES (?, ?);

-- name: TenantByName :one
SELECT t.name, t.database_name, t.created_at, COALESCE(s.dsn, '') AS dsn
FROM t_tenants t LEFT JOIN t_tenant_servers s ON s.name = t.name
WHERE t.name = ?;
