ALTER TABLE t_conversation_members DROP COLUMN delivered_seq;
