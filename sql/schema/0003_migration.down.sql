DROP TABLE IF EXISTS im_migration_batches;
DROP TABLE IF EXISTS im_migration_months;
DROP TABLE IF EXISTS im_migration_segments;
DROP TABLE IF EXISTS im_migration_topics;
DROP TABLE IF EXISTS im_migration_jobs;
