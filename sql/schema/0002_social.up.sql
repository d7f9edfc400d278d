-- Social graph beyond 0001 (issue 6): pending friend requests, profile avatars, user reports,
-- and an index so a user's blocks and memberships are listed without scanning.

-- A pending request From → To; accepting it deletes the row and writes t_friendships in one
-- transaction, so a request never outlives the friendship it made.
CREATE TABLE t_friend_requests (
    from_user  BIGINT       NOT NULL,
    to_user    BIGINT       NOT NULL,
    message    VARCHAR(255) NOT NULL DEFAULT '',
    created_at DATETIME(3)  NOT NULL,
    PRIMARY KEY (from_user, to_user),
    KEY idx_to_created (to_user, created_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- Friends are listed from either side of the pair.
CREATE INDEX idx_friend_big ON t_friendships (user_big, user_small);

-- A user's conversations are paged by conversation id.
CREATE INDEX idx_user_conversation ON t_conversation_members (user_id, conversation_id);

-- A group's owner, admins and muted members are read without scanning all its members.
CREATE INDEX idx_conversation_role ON t_conversation_members (conversation_id, role);
CREATE INDEX idx_conversation_muted ON t_conversation_members (conversation_id, muted_until);

-- An object-store key, never image bytes.
ALTER TABLE t_users ADD COLUMN avatar VARCHAR(255) NOT NULL DEFAULT '' AFTER nickname;

-- Users' reports of messages (topic + seq, so the evidence is found across months).
CREATE TABLE t_reports (
    id         BIGINT       NOT NULL COMMENT 'sonyflake id',
    reporter   BIGINT       NOT NULL,
    topic      VARCHAR(64)  NOT NULL,
    seqid      BIGINT       NOT NULL,
    reason     VARCHAR(512) NOT NULL DEFAULT '',
    status     VARCHAR(16)  NOT NULL DEFAULT 'open' COMMENT 'open/resolved/dismissed',
    created_at DATETIME(3)  NOT NULL,
    updated_at DATETIME(3)  NOT NULL,
    PRIMARY KEY (id),
    UNIQUE KEY uk_reporter_message (reporter, topic, seqid),
    KEY idx_status_id (status, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
