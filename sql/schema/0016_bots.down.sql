ALTER TABLE t_webhook_endpoints DROP COLUMN bot_id;
DROP TABLE t_bots;
