ALTER TABLE im_message_revisions DROP KEY idx_created;
ALTER TABLE t_webhook_endpoints DROP COLUMN bot_id;
DROP TABLE t_bots;
