-- Reactions and pinned messages (issue 31, DESIGN §3.1): references into messages by topic +
-- seq, never by month table, so they work on messages of sealed and archived months and
-- survive the loss of Redis.

-- One row per user, message and emoji. The emoji compares byte for byte: the unicode
-- collations hold many emojis equal.
CREATE TABLE im_reactions (
    topic      VARCHAR(64)  NOT NULL,
    seqid      BIGINT       NOT NULL,
    emoji      VARCHAR(64)  CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    user_id    BIGINT       NOT NULL,
    created_at DATETIME(3)  NOT NULL,
    PRIMARY KEY (topic, seqid, emoji, user_id),
    KEY idx_message_user (topic, seqid, user_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- The pinned messages of each conversation.
CREATE TABLE im_pins (
    topic      VARCHAR(64)  NOT NULL,
    seqid      BIGINT       NOT NULL,
    pinned_by  BIGINT       NOT NULL,
    created_at DATETIME(3)  NOT NULL,
    PRIMARY KEY (topic, seqid)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
