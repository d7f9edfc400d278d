DROP TABLE t_webhook_endpoints;
