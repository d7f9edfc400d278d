ALTER TABLE t_conversation_members DROP KEY idx_conversation_read;
ALTER TABLE t_user_settings DROP COLUMN hide_receipts;
