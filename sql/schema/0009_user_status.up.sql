-- A user an operator disables or deletes (issue 33, DESIGN §8.1): the status column of 0001 gains the final status 3. A deleted user keeps its row,
-- so its id is never given to someone else and messages keep naming their sender.
ALTER TABLE t_users
    MODIFY status TINYINT NOT NULL DEFAULT 1 COMMENT '1=active 2=disabled 3=deleted';
