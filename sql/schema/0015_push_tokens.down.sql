DROP TABLE t_push_dead_letters;
DROP TABLE t_push_tokens;
