-- Member, friendship and report events for webhooks (issue 32, docs/DESIGN.md issue-32 part 2
-- "Member, friendship and report events"): no other row keeps an ordered, durable record of a
-- join, a leave or a friendship's end (the member and friendship rows are deleted), so each
-- change writes one row here in its own transaction; delivery reads them by id like the
-- revisions, from MySQL, whatever Redis lost.
CREATE TABLE t_webhook_events (
    id         BIGINT       NOT NULL AUTO_INCREMENT,
    type       VARCHAR(32)  NOT NULL,
    topic      VARCHAR(64)  NOT NULL,
    data       MEDIUMBLOB   NOT NULL,
    created_at DATETIME(3)  NOT NULL,
    PRIMARY KEY (id),
    KEY idx_created (created_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
