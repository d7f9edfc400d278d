-- The daily summary behind the admin statistics (issue 6; seed 000 §6.6: never a COUNT over a
-- month table). Counts are aggregated in memory after COMMIT and added every few seconds with
-- one upsert per day (core/loop/dailystats), so no send writes this row itself.
CREATE TABLE t_daily_stats (
    day            DATE        NOT NULL COMMENT 'UTC date the messages were stored',
    messages       BIGINT      NOT NULL DEFAULT 0 COMMENT 'group_messages + p2p_messages',
    group_messages BIGINT      NOT NULL DEFAULT 0,
    p2p_messages   BIGINT      NOT NULL DEFAULT 0,
    updated_at     DATETIME(3) NOT NULL,
    PRIMARY KEY (day)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
