-- Run once by the mysql image when it initialises an empty data directory, after it has
-- created MYSQL_USER (imd). imd creates one database per tenant (imd_<tenant> unless a
-- tenant names another database in the config) and migrates it when it starts, so it
-- needs every privilege on those databases, and nothing else.
GRANT ALL PRIVILEGES ON `imd\_%`.* TO 'imd'@'%';
FLUSH PRIVILEGES;
