-- The token deny-list (issue 19: revocations outlive Redis). Redis caches it; these rows are
-- the truth. Each row expires when the tokens it denies would have expired anyway, and expired
-- rows are removed by later revocations, a few at a time.
CREATE TABLE im_revoked_tokens (
    token_id   VARCHAR(64) NOT NULL COMMENT 'jti of the revoked token',
    expires_at DATETIME(3) NOT NULL COMMENT 'the token''s own expiry: the row is useless after it',
    PRIMARY KEY (token_id),
    KEY idx_expires (expires_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE im_user_token_cutoffs (
    user_id    BIGINT      NOT NULL,
    cutoff_at  DATETIME(3) NOT NULL COMMENT 'every token of the user issued until then is revoked',
    expires_at DATETIME(3) NOT NULL COMMENT 'cutoff_at + the longest token lifetime',
    PRIMARY KEY (user_id),
    KEY idx_expires (expires_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
