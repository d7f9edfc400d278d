ALTER TABLE im_group_message_shards DROP COLUMN active_since;
