-- Deleted users fold back into disabled ones: neither authenticates.
UPDATE t_users SET status = 2 WHERE status = 3;
ALTER TABLE t_users
    MODIFY status TINYINT NOT NULL DEFAULT 1 COMMENT '1=active 2=disabled';
