DROP TABLE IF EXISTS im_media_refs;
