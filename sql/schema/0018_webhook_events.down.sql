DROP TABLE t_webhook_events;
