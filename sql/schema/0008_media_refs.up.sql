-- Which conversations reference each media object (issue 33): a user may read an object it
-- uploaded, or one a message of a conversation it may read references. A row is written
-- before the message that carries the key is stored, so every stored message has its row.
CREATE TABLE im_media_refs (
    object_key VARCHAR(128) NOT NULL,
    topic      VARCHAR(64)  NOT NULL,
    PRIMARY KEY (object_key, topic)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
