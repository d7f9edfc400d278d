-- Tenant registry (issue 6): the tenants provisioned through the admin API, shared by every node.
-- It lives in its own database, apart from every tenant's, and is created when a node starts:
-- tables that only ever gain rows, and a new table for what a later version records, so
-- CREATE … IF NOT EXISTS is all the migration it needs.
CREATE TABLE IF NOT EXISTS t_tenants (
    name          VARCHAR(31)  NOT NULL,
    database_name VARCHAR(64)  NOT NULL,
    created_at    DATETIME(3)  NOT NULL,
    PRIMARY KEY (name),
    UNIQUE KEY uk_database (database_name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- The server of each tenant whose database is not on the deployment's own (issue 14): its
-- go-sql-driver DSN, password included, so every node finds the tenant where it lives. A
-- tenant without a row here is on mysql.dsn.
CREATE TABLE IF NOT EXISTS t_tenant_servers (
    name VARCHAR(31)   NOT NULL,
    dsn  VARCHAR(1024) NOT NULL,
    PRIMARY KEY (name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
