-- Tenant registry (issue 6): the tenants provisioned through the admin API, shared by every node.
-- It lives in its own database, apart from every tenant's, and is created when a node starts:
-- one table that only ever gains rows, so CREATE … IF NOT EXISTS is all the migration it needs.
CREATE TABLE IF NOT EXISTS t_tenants (
    name          VARCHAR(31)  NOT NULL,
    database_name VARCHAR(64)  NOT NULL,
    created_at    DATETIME(3)  NOT NULL,
    PRIMARY KEY (name),
    UNIQUE KEY uk_database (database_name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
