-- Bot accounts (issue 32, docs/DESIGN.md issue-32 part 2 "Bots"): a bot is a user of the tenant
-- that an operator made through the admin API; this row says it is one, for the console and
-- for the endpoints bound to it.
CREATE TABLE t_bots (
    user_id    BIGINT      NOT NULL,
    name       VARCHAR(64) NOT NULL,
    created_at DATETIME(3) NOT NULL,
    PRIMARY KEY (user_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- An endpoint bound to a bot receives the events of the conversations the bot may read only;
-- 0: every conversation of the tenant.
ALTER TABLE t_webhook_endpoints ADD COLUMN bot_id BIGINT NOT NULL DEFAULT 0 AFTER enabled;

-- Webhook delivery reads edits and recalls by the window of their creation (issue 32 part 2
-- "Edits and recalls"), so a pass reads what is new, not the table from its first row.
ALTER TABLE im_message_revisions ADD KEY idx_created (created_at);
