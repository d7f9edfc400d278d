-- Tenant database schema (one database per tenant, DESIGN §1). Written for MariaDB 10.11 and
-- MySQL 8 alike: no vendor-only syntax. JSON is a real type on MySQL and LONGTEXT + CHECK on
-- MariaDB; the adapter always sends JSON as text so both accept it.

-- Month-table template (seed 000 §3.1). Never written to: the shard manager creates
-- im_group_messages_YYYYMM LIKE this table, and the sqlc queries name it so the MySQL adapter
-- can rewrite it to a catalog-registered month table (DESIGN §2).
CREATE TABLE im_group_messages_tpl (
    message_id         BIGINT       NOT NULL COMMENT 'sonyflake msg_id, global',
    topic              VARCHAR(64)  NOT NULL,
    group_id           BIGINT       NOT NULL COMMENT '0 for P2P topics',
    conversation_id    BIGINT       NOT NULL DEFAULT 0 COMMENT 'numeric alias of the topic (seed 003)',
    seqid              BIGINT       NOT NULL COMMENT 'per topic, never reset across months',
    from_user          BIGINT       NOT NULL,
    client_msg_id      VARCHAR(64)  NULL COMMENT 'NULL for tombstones',
    msg_type           VARCHAR(32)  NOT NULL DEFAULT 'text',
    status             VARCHAR(32)  NOT NULL DEFAULT 'normal' COMMENT 'normal/recalled/deleted',
    content            JSON         NULL,
    head               JSON         NULL,
    mentioned_user_ids JSON         NULL,
    mention_all        TINYINT(1)   NOT NULL DEFAULT 0,
    reply_seqid        BIGINT       NULL,
    root_seqid         BIGINT       NULL,
    file_count         INT          NOT NULL DEFAULT 0,
    content_size       INT          NOT NULL DEFAULT 0,
    has_risk           TINYINT(1)   NOT NULL DEFAULT 0,
    audit_status       VARCHAR(32)  NOT NULL DEFAULT 'pass',
    version            INT          NOT NULL DEFAULT 1,
    recalled_at        DATETIME(3)  NULL,
    recalled_by        BIGINT       NULL,
    edited_at          DATETIME(3)  NULL,
    deleted_at         DATETIME(3)  NULL,
    expires_at         DATETIME(3)  NULL,
    created_at         DATETIME(3)  NOT NULL,
    updated_at         DATETIME(3)  NOT NULL,
    PRIMARY KEY (message_id),
    UNIQUE KEY uk_topic_seq (topic, seqid),
    UNIQUE KEY uk_topic_sender_client_mid (topic, from_user, client_msg_id),
    KEY idx_group_seq (group_id, seqid),
    KEY idx_topic_created (topic, created_at),
    KEY idx_topic_from_seq (topic, from_user, seqid),
    KEY idx_audit_created (audit_status, created_at),
    KEY idx_expires (expires_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- Month-table catalog (seed 000 §3.2): a month table is used only once registered here.
CREATE TABLE im_group_message_shards (
    shard_month    CHAR(6)      NOT NULL COMMENT 'UTC month YYYYMM',
    table_name     VARCHAR(64)  NOT NULL,
    shard_start    DATETIME(3)  NOT NULL,
    shard_end      DATETIME(3)  NOT NULL,
    status         VARCHAR(16)  NOT NULL DEFAULT 'prepared' COMMENT 'prepared/writable/sealing/sealed/archived',
    row_count      BIGINT       NOT NULL DEFAULT 0,
    min_created_at DATETIME(3)  NULL,
    max_created_at DATETIME(3)  NULL,
    created_at     DATETIME(3)  NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
    updated_at     DATETIME(3)  NOT NULL DEFAULT CURRENT_TIMESTAMP(3) ON UPDATE CURRENT_TIMESTAMP(3),
    PRIMARY KEY (shard_month),
    UNIQUE KEY uk_table_name (table_name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- Route mirror (seed 000 §3.4): each topic's seq range per month, written in the same
-- transaction as the messages; the source for rebuilding the Redis route.
CREATE TABLE im_group_message_topic_shards (
    topic          VARCHAR(64)  NOT NULL,
    shard_month    CHAR(6)      NOT NULL,
    min_seq        BIGINT       NOT NULL,
    max_seq        BIGINT       NOT NULL,
    message_count  BIGINT       NOT NULL DEFAULT 0,
    min_created_at DATETIME(3)  NOT NULL,
    max_created_at DATETIME(3)  NOT NULL,
    created_at     DATETIME(3)  NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
    updated_at     DATETIME(3)  NOT NULL DEFAULT CURRENT_TIMESTAMP(3) ON UPDATE CURRENT_TIMESTAMP(3),
    PRIMARY KEY (topic, shard_month),
    KEY idx_topic_max_seq (topic, max_seq),
    KEY idx_month_topic (shard_month, topic)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- Cross-month idempotency (seed 000 §3.5) plus the payload hash, so a reused client_msg_id
-- with other content is told apart from a retry (DESIGN §1 "Dedup strength").
CREATE TABLE im_group_message_dedup (
    topic         VARCHAR(64)  NOT NULL,
    from_user     BIGINT       NOT NULL,
    client_msg_id VARCHAR(64)  NOT NULL,
    seqid         BIGINT       NOT NULL,
    shard_month   CHAR(6)      NOT NULL,
    message_id    BIGINT       NULL,
    payload_hash  CHAR(32)     NOT NULL,
    status        VARCHAR(16)  NOT NULL DEFAULT 'pending',
    expires_at    DATETIME(3)  NOT NULL,
    created_at    DATETIME(3)  NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
    updated_at    DATETIME(3)  NOT NULL DEFAULT CURRENT_TIMESTAMP(3) ON UPDATE CURRENT_TIMESTAMP(3),
    PRIMARY KEY (topic, from_user, client_msg_id),
    KEY idx_expires (expires_at),
    KEY idx_topic_seq (topic, seqid)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- Per-user delete ranges (seed 000 §2.3, §6.2): the user no longer sees seqs [low, hi) of topic.
CREATE TABLE im_dellog (
    id         BIGINT       NOT NULL AUTO_INCREMENT,
    topic      VARCHAR(64)  NOT NULL,
    deletedfor BIGINT       NOT NULL COMMENT 'user the range is hidden for',
    low        BIGINT       NOT NULL COMMENT 'first hidden seq',
    hi         BIGINT       NOT NULL COMMENT 'first seq after the range (exclusive)',
    created_at DATETIME(3)  NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
    PRIMARY KEY (id),
    KEY idx_topic_user_low (topic, deletedfor, low)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- Recall/edit history (seed 000 §7), with the month so the message is found again.
CREATE TABLE im_message_revisions (
    id          BIGINT       NOT NULL AUTO_INCREMENT,
    topic       VARCHAR(64)  NOT NULL,
    shard_month CHAR(6)      NOT NULL,
    seqid       BIGINT       NOT NULL,
    message_id  BIGINT       NOT NULL,
    version     INT          NOT NULL,
    editor      BIGINT       NOT NULL,
    action      VARCHAR(16)  NOT NULL COMMENT 'edit/recall/delete',
    old_content JSON         NULL,
    new_content JSON         NULL,
    created_at  DATETIME(3)  NOT NULL,
    PRIMARY KEY (id),
    KEY idx_topic_seq (topic, seqid),
    KEY idx_message (message_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- Conversations (seed 003 §10.2): the numeric alias of a topic.
CREATE TABLE t_conversations (
    id          BIGINT       NOT NULL,
    type        TINYINT      NOT NULL COMMENT '1=P2P 2=GROUP',
    topic       VARCHAR(64)  NOT NULL,
    group_id    BIGINT       NOT NULL DEFAULT 0,
    last_msg_id BIGINT       NOT NULL DEFAULT 0,
    last_seq    BIGINT       NOT NULL DEFAULT 0,
    last_msg_at DATETIME(3)  NOT NULL,
    created_at  DATETIME(3)  NOT NULL,
    PRIMARY KEY (id),
    UNIQUE KEY uk_topic (topic)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- Two users always share one P2P conversation: smaller uid first (seed 003 §10.2).
CREATE TABLE t_p2p_conversations (
    id              BIGINT  NOT NULL AUTO_INCREMENT,
    user_small      BIGINT  NOT NULL,
    user_big        BIGINT  NOT NULL,
    conversation_id BIGINT  NOT NULL,
    PRIMARY KEY (id),
    UNIQUE KEY uk_p2p_users (user_small, user_big),
    UNIQUE KEY uk_conversation (conversation_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- Members and their read state (seed 003 §10.2, §14); P2P pairs have rows too, for read state.
CREATE TABLE t_conversation_members (
    id               BIGINT       NOT NULL AUTO_INCREMENT,
    conversation_id  BIGINT       NOT NULL,
    user_id          BIGINT       NOT NULL,
    last_read_msg_id BIGINT       NOT NULL DEFAULT 0,
    last_read_seq    BIGINT       NOT NULL DEFAULT 0,
    joined_at        DATETIME(3)  NOT NULL,
    muted            TINYINT      NOT NULL DEFAULT 0,
    role             VARCHAR(16)  NOT NULL DEFAULT 'member' COMMENT 'owner/admin/member',
    muted_until      DATETIME(3)  NULL,
    PRIMARY KEY (id),
    UNIQUE KEY uk_conversation_members (conversation_id, user_id),
    KEY idx_user_id (user_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- Failed pushes and per-user control events (seed 003 §10.3); never one row per pushed message.
CREATE TABLE t_mailbox_events (
    id              BIGINT          NOT NULL,
    user_id         BIGINT          NOT NULL,
    device_id       BIGINT          NOT NULL COMMENT '0 = every device of the user',
    seq             BIGINT          NOT NULL,
    event_type      SMALLINT        NOT NULL COMMENT 'RECALL/KICK/MEMBER/FRIEND/MISSED_MESSAGE',
    conversation_id BIGINT          NULL,
    payload         VARBINARY(4096) NULL COMMENT 'conversation_id + msg_id, never message text',
    created_at      DATETIME(3)     NOT NULL,
    PRIMARY KEY (id),
    UNIQUE KEY uk_user_device_seq (user_id, device_id, seq)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE t_device_sync_cursors (
    id           BIGINT       NOT NULL AUTO_INCREMENT,
    user_id      BIGINT       NOT NULL,
    device_id    BIGINT       NOT NULL,
    mailbox_seq  BIGINT       NOT NULL DEFAULT 0,
    dialog_score BIGINT       NOT NULL DEFAULT 0 COMMENT 'Redis dialog ZSET score cursor',
    updated_at   DATETIME(3)  NOT NULL,
    PRIMARY KEY (id),
    UNIQUE KEY uk_user_device (user_id, device_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- Social graph a send is checked against (DESIGN §3).
CREATE TABLE t_users (
    user_id    BIGINT       NOT NULL,
    nickname   VARCHAR(64)  NOT NULL DEFAULT '',
    status     TINYINT      NOT NULL DEFAULT 1 COMMENT '1=active 2=disabled',
    created_at DATETIME(3)  NOT NULL,
    updated_at DATETIME(3)  NOT NULL,
    PRIMARY KEY (user_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- One row per friend pair, smaller uid first, so the pair has one spelling.
CREATE TABLE t_friendships (
    user_small BIGINT       NOT NULL,
    user_big   BIGINT       NOT NULL,
    created_at DATETIME(3)  NOT NULL,
    PRIMARY KEY (user_small, user_big)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE t_blocks (
    user_id         BIGINT       NOT NULL,
    blocked_user_id BIGINT       NOT NULL,
    created_at      DATETIME(3)  NOT NULL,
    PRIMARY KEY (user_id, blocked_user_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE t_groups (
    group_id        BIGINT       NOT NULL,
    owner_id        BIGINT       NOT NULL,
    name            VARCHAR(128) NOT NULL DEFAULT '',
    conversation_id BIGINT       NOT NULL,
    mute_all        TINYINT(1)   NOT NULL DEFAULT 0,
    created_at      DATETIME(3)  NOT NULL,
    updated_at      DATETIME(3)  NOT NULL,
    PRIMARY KEY (group_id),
    UNIQUE KEY uk_conversation (conversation_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
