-- Migration of the legacy single table im_group_messages into the month tables (seed 000 §9).
-- The legacy table itself is not created here: it comes from an operator's existing database
-- (sql/legacy/schema.sql has its shape). These tables hold the job, its cutover watermark and
-- inventory, and what each batch and each verification did.

-- The job: one row per tenant database (id = 1). cursor_* is the copy position in
-- (created_at, message_id) order; message_id 0 means before the first row.
CREATE TABLE im_migration_jobs (
    id                TINYINT      NOT NULL,
    phase             VARCHAR(16)  NOT NULL COMMENT 'copying/paused/verifying/verified/failed/finished',
    cutover_time      DATETIME(3)  NOT NULL COMMENT 'after it new messages go to month tables only',
    prepared          TINYINT(1)   NOT NULL DEFAULT 0 COMMENT 'month tables, seq counters and routes done',
    cursor_created_at DATETIME(3)  NOT NULL DEFAULT '1970-01-01 00:00:00.000',
    cursor_message_id BIGINT       NOT NULL DEFAULT 0,
    copy_done         TINYINT(1)   NOT NULL DEFAULT 0,
    run               INT          NOT NULL DEFAULT 1 COMMENT 'one more per rerun from the first row',
    legacy_rows       BIGINT       NOT NULL DEFAULT 0,
    topics            BIGINT       NOT NULL DEFAULT 0,
    copied_rows       BIGINT       NOT NULL DEFAULT 0,
    skipped_rows      BIGINT       NOT NULL DEFAULT 0,
    failed_rows       BIGINT       NOT NULL DEFAULT 0,
    batches           BIGINT       NOT NULL DEFAULT 0,
    error             TEXT         NULL,
    report            JSON         NULL COMMENT 'the last verification report',
    created_at        DATETIME(3)  NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
    updated_at        DATETIME(3)  NOT NULL DEFAULT CURRENT_TIMESTAMP(3) ON UPDATE CURRENT_TIMESTAMP(3),
    PRIMARY KEY (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- The cutover watermark per topic: its highest legacy seq; imd's seqs continue above it. The
-- conversation id is the topic's at the cutover, which its legacy rows keep.
CREATE TABLE im_migration_topics (
    topic           VARCHAR(64)  NOT NULL,
    cutover_seq     BIGINT       NOT NULL,
    legacy_rows     BIGINT       NOT NULL,
    conversation_id BIGINT       NOT NULL DEFAULT 0,
    PRIMARY KEY (topic)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- The inventory at the cutover: each topic's legacy rows per month of created_at, and how
-- that part verified.
CREATE TABLE im_migration_segments (
    topic          VARCHAR(64)  NOT NULL,
    shard_month    CHAR(6)      NOT NULL,
    min_seq        BIGINT       NOT NULL,
    max_seq        BIGINT       NOT NULL,
    row_count      BIGINT       NOT NULL,
    min_created_at DATETIME(3)  NOT NULL,
    max_created_at DATETIME(3)  NOT NULL,
    verify_status  VARCHAR(16)  NOT NULL DEFAULT '' COMMENT '/ok/mismatch',
    legacy_hash    CHAR(64)     NOT NULL DEFAULT '' COMMENT 'SHA-256 over ordered (seq, msg_id, status, content)',
    month_hash     CHAR(64)     NOT NULL DEFAULT '',
    verified_at    DATETIME(3)  NULL,
    PRIMARY KEY (topic, shard_month),
    KEY idx_month_topic (shard_month, topic)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- Per month: the inventory's totals, the current run's progress, the verification outcome.
CREATE TABLE im_migration_months (
    shard_month   CHAR(6)      NOT NULL,
    legacy_rows   BIGINT       NOT NULL,
    topics        BIGINT       NOT NULL,
    copied_rows   BIGINT       NOT NULL DEFAULT 0,
    skipped_rows  BIGINT       NOT NULL DEFAULT 0,
    failed_rows   BIGINT       NOT NULL DEFAULT 0,
    verify_status VARCHAR(16)  NOT NULL DEFAULT '' COMMENT '/ok/mismatch',
    verified_at   DATETIME(3)  NULL,
    PRIMARY KEY (shard_month)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- One row per committed copy batch: its cursor range and what it did.
CREATE TABLE im_migration_batches (
    id                BIGINT       NOT NULL AUTO_INCREMENT,
    run               INT          NOT NULL,
    start_created_at  DATETIME(3)  NOT NULL,
    start_message_id  BIGINT       NOT NULL,
    end_created_at    DATETIME(3)  NOT NULL,
    end_message_id    BIGINT       NOT NULL,
    rows_read         INT          NOT NULL,
    copied            INT          NOT NULL,
    skipped           INT          NOT NULL,
    failed            INT          NOT NULL,
    failed_keys       JSON         NULL COMMENT 'the first rows not copied: [{topic, seq}]',
    started_at        DATETIME(3)  NOT NULL,
    finished_at       DATETIME(3)  NOT NULL,
    PRIMARY KEY (id),
    KEY idx_run (run, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
