ALTER TABLE t_reports DROP KEY idx_topic_seq;
DROP TABLE IF EXISTS im_group_files;
DROP TABLE IF EXISTS im_favorites;
