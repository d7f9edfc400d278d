-- Event webhook endpoints (issue 32, docs/DESIGN.md issue-32 part 2). The secret is kept as
-- given, not hashed: the deliverer signs every request with it.
CREATE TABLE t_webhook_endpoints (
    id          BIGINT        NOT NULL,
    url         VARCHAR(2048) NOT NULL,
    description VARCHAR(256)  NOT NULL DEFAULT '',
    events      JSON          NOT NULL COMMENT 'array of subscribed event types',
    enabled     TINYINT(1)    NOT NULL DEFAULT 1,
    secret      VARCHAR(128)  NOT NULL,
    created_at  DATETIME(3)   NOT NULL,
    updated_at  DATETIME(3)   NOT NULL,
    PRIMARY KEY (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
