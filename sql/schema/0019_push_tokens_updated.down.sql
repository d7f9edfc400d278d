ALTER TABLE t_push_tokens DROP KEY idx_updated;
