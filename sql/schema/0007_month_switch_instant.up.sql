-- The instant, on the Redis clock, at which a month was already the active one (issue 18: a
-- Redis that lost a switch hands out the month before; the write transaction refuses a new
-- allocation made after this instant in an older month, and takes one made before it).
ALTER TABLE im_group_message_shards
    ADD COLUMN active_since DATETIME(3) NULL COMMENT 'Redis-clock instant the month was active by; NULL until recorded' AFTER status;
