-- Where each webhook endpoint's delivery stands (issue 32, docs/DESIGN.md issue-32 part 2
-- "Backlog from MySQL"): the backlog itself is the month tables, so only cursors are kept.

-- The instant from which the endpoint's next pass looks for changed topics in the route mirror,
-- and the point of the last replay: a topic met anew starts with its messages from then.
CREATE TABLE t_webhook_scan_marks (
    endpoint_id BIGINT      NOT NULL,
    scanned_to  DATETIME(3) NOT NULL,
    replay_from DATETIME(3) NULL COMMENT 'NULL: the endpoint''s creation',
    PRIMARY KEY (endpoint_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- The last seq of each topic the endpoint is done with (delivered, dead-lettered or skipped).
CREATE TABLE t_webhook_cursors (
    endpoint_id BIGINT      NOT NULL,
    topic       VARCHAR(64) NOT NULL,
    seqid       BIGINT      NOT NULL,
    PRIMARY KEY (endpoint_id, topic)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- Events given up on after the last attempt; their topic moved on.
CREATE TABLE t_webhook_dead_letters (
    id          BIGINT       NOT NULL AUTO_INCREMENT,
    endpoint_id BIGINT       NOT NULL,
    topic       VARCHAR(64)  NOT NULL,
    seqid       BIGINT       NOT NULL,
    event_type  VARCHAR(32)  NOT NULL,
    attempts    INT          NOT NULL,
    last_error  VARCHAR(512) NOT NULL,
    created_at  DATETIME(3)  NOT NULL,
    PRIMARY KEY (id),
    KEY idx_endpoint (endpoint_id, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
