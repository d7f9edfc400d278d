-- Presence (issue 31): when each user was last seen online, written when the user comes
-- online or goes offline (never per heartbeat), so it outlives Redis; and each user's own
-- settings, one column per setting (a later one is a new column, not a new table).
CREATE TABLE t_user_last_seen (
    user_id   BIGINT NOT NULL PRIMARY KEY,
    last_seen BIGINT NOT NULL COMMENT 'Unix ms'
) ENGINE=InnoDB;

CREATE TABLE t_user_settings (
    user_id       BIGINT     NOT NULL PRIMARY KEY,
    hide_presence TINYINT(1) NOT NULL DEFAULT 0
) ENGINE=InnoDB;
