-- References into messages by topic + seq, never by month table (seed 000 §8, §10), so they
-- resolve wherever the message lives: a live month table, the archive, or a restored table.

-- A user's saved messages.
CREATE TABLE im_favorites (
    id         BIGINT       NOT NULL AUTO_INCREMENT COMMENT 'page cursor: newer is larger',
    user_id    BIGINT       NOT NULL,
    topic      VARCHAR(64)  NOT NULL,
    seqid      BIGINT       NOT NULL,
    created_at DATETIME(3)  NOT NULL,
    PRIMARY KEY (id),
    UNIQUE KEY uk_user_message (user_id, topic, seqid),
    KEY idx_user_id (user_id, id),
    KEY idx_topic_seq (topic, seqid)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- The file messages of each group, written after the message committed.
CREATE TABLE im_group_files (
    topic        VARCHAR(64)  NOT NULL,
    seqid        BIGINT       NOT NULL,
    message_id   BIGINT       NOT NULL,
    from_user    BIGINT       NOT NULL,
    file_name    VARCHAR(255) NOT NULL,
    file_size    BIGINT       NOT NULL DEFAULT 0,
    object_key   VARCHAR(512) NOT NULL,
    content_type VARCHAR(127) NOT NULL DEFAULT '',
    created_at   DATETIME(3)  NOT NULL,
    PRIMARY KEY (topic, seqid)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- Archiving proves that every reference into a month still resolves, by topic + seq.
ALTER TABLE t_reports ADD KEY idx_topic_seq (topic, seqid);
