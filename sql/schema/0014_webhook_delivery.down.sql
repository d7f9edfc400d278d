DROP TABLE t_webhook_dead_letters;
DROP TABLE t_webhook_cursors;
DROP TABLE t_webhook_scan_marks;
