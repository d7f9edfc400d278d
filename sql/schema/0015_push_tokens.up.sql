-- Native push (issue 32 part 1, docs/DESIGN.md issue-32 "Native push"): one token per user and
-- device, registered by the device; a token the provider calls invalid is deleted by value.
CREATE TABLE t_push_tokens (
    user_id    BIGINT       NOT NULL,
    device_id  VARCHAR(64)  NOT NULL,
    platform   VARCHAR(8)   NOT NULL COMMENT 'apns or fcm',
    app_id     VARCHAR(128) NOT NULL,
    token      VARCHAR(512) NOT NULL,
    locale     VARCHAR(35)  NOT NULL DEFAULT '',
    updated_at DATETIME(3)  NOT NULL,
    PRIMARY KEY (user_id, device_id),
    KEY idx_token (platform, token(191))
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- Alerts given up on after the last attempt, per provider.
CREATE TABLE t_push_dead_letters (
    id         BIGINT       NOT NULL AUTO_INCREMENT,
    provider   VARCHAR(8)   NOT NULL,
    user_id    BIGINT       NOT NULL,
    device_id  VARCHAR(64)  NOT NULL,
    msg_id     BIGINT       NOT NULL,
    attempts   INT          NOT NULL,
    last_error VARCHAR(512) NOT NULL,
    created_at DATETIME(3)  NOT NULL,
    PRIMARY KEY (id),
    KEY idx_provider (provider, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
