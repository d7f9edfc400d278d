-- Queries of the legacy single-table migration (seed 000 §9), generated into
-- adapters/mysql/legacydb. im_group_messages is the legacy table (sql/legacy/schema.sql);
-- queries naming the template im_group_messages_tpl run through the month-table wrapper like
-- those of sql/queries. A legacy row's conversation_id is its topic's: from the cutover's
-- snapshot (im_migration_topics) once recorded, so a conversation created later — a P2P pair's
-- first message through imd — changes neither reads nor copies, and a row reads the same
-- before and after its copy; before the cutover from t_conversations.

-- Dual read ------------------------------------------------------------------------------

-- name: LegacyMaxSeq :one
SELECT CAST(COALESCE(MAX(seqid), 0) AS SIGNED) AS max_seq FROM im_group_messages WHERE topic = ?;

-- A topic's legacy rows per month, read from the table itself before the cutover.
-- name: LegacyLiveSegments :many
SELECT CAST(EXTRACT(YEAR_MONTH FROM created_at) AS SIGNED) AS shard_month,
    CAST(MIN(seqid) AS SIGNED) AS min_seq, CAST(MAX(seqid) AS SIGNED) AS max_seq,
    COUNT(*) AS row_count,
    CAST(MIN(created_at) AS DATETIME(3)) AS min_created_at, CAST(MAX(created_at) AS DATETIME(3)) AS max_created_at
FROM im_group_messages
WHERE topic = ?
GROUP BY shard_month;

-- The same from the cutover inventory, once recorded (the legacy table no longer changes).
-- name: InventorySegments :many
SELECT shard_month, min_seq, max_seq, row_count, min_created_at, max_created_at
FROM im_migration_segments
WHERE topic = ?;

-- One topic's legacy seq range in one month, from the table itself before the cutover.
-- name: LegacyLiveMonthRange :one
SELECT CAST(COALESCE(MIN(seqid), 0) AS SIGNED) AS min_seq, CAST(COALESCE(MAX(seqid), 0) AS SIGNED) AS max_seq
FROM im_group_messages
WHERE topic = sqlc.arg(topic) AND created_at >= sqlc.arg(from_time) AND created_at < sqlc.arg(to_time);

-- name: InventoryMonthRange :one
SELECT min_seq, max_seq FROM im_migration_segments WHERE topic = ? AND shard_month = ?;

-- name: LegacyGet :one
SELECT sqlc.embed(l), CAST(COALESCE(w.conversation_id, c.id, 0) AS SIGNED) AS conversation_id
FROM im_group_messages AS l
LEFT JOIN im_migration_topics AS w ON w.topic = l.topic
LEFT JOIN t_conversations AS c ON c.topic = l.topic
WHERE l.topic = ? AND l.seqid = ?;

-- name: LegacyFindByID :one
SELECT sqlc.embed(l), CAST(COALESCE(w.conversation_id, c.id, 0) AS SIGNED) AS conversation_id
FROM im_group_messages AS l
LEFT JOIN im_migration_topics AS w ON w.topic = l.topic
LEFT JOIN t_conversations AS c ON c.topic = l.topic
WHERE l.message_id = ?;

-- Pages of the legacy rows of one month (created_at in [from_time, to_time), seqs bounded by
-- the month's legacy range so the scan stays in the month) that the month table does not hold
-- yet, hiding the viewer's deleted ranges like PageMessagesAsc/Desc.

-- name: LegacyPageAsc :many
SELECT sqlc.embed(l), CAST(COALESCE(w.conversation_id, c.id, 0) AS SIGNED) AS conversation_id
FROM im_group_messages AS l
LEFT JOIN im_migration_topics AS w ON w.topic = l.topic
LEFT JOIN t_conversations AS c ON c.topic = l.topic
LEFT JOIN im_dellog AS d
    ON d.topic = l.topic AND d.deletedfor = sqlc.arg(viewer)
    AND l.seqid >= d.low AND l.seqid < d.hi
WHERE l.topic = sqlc.arg(topic) AND l.seqid > sqlc.arg(after) AND l.seqid < sqlc.arg(before)
    AND l.created_at >= sqlc.arg(from_time) AND l.created_at < sqlc.arg(to_time)
    AND (l.status <> 'deleted' OR CAST(sqlc.arg(include_deleted) AS UNSIGNED) = 1)
    AND d.id IS NULL
    AND NOT EXISTS (SELECT 1 FROM im_group_messages_tpl AS m WHERE m.topic = l.topic AND m.seqid = l.seqid)
ORDER BY l.seqid ASC
LIMIT ?;

-- name: LegacyPageDesc :many
SELECT sqlc.embed(l), CAST(COALESCE(w.conversation_id, c.id, 0) AS SIGNED) AS conversation_id
FROM im_group_messages AS l
LEFT JOIN im_migration_topics AS w ON w.topic = l.topic
LEFT JOIN t_conversations AS c ON c.topic = l.topic
LEFT JOIN im_dellog AS d
    ON d.topic = l.topic AND d.deletedfor = sqlc.arg(viewer)
    AND l.seqid >= d.low AND l.seqid < d.hi
WHERE l.topic = sqlc.arg(topic) AND l.seqid > sqlc.arg(after) AND l.seqid < sqlc.arg(before)
    AND l.created_at >= sqlc.arg(from_time) AND l.created_at < sqlc.arg(to_time)
    AND (l.status <> 'deleted' OR CAST(sqlc.arg(include_deleted) AS UNSIGNED) = 1)
    AND d.id IS NULL
    AND NOT EXISTS (SELECT 1 FROM im_group_messages_tpl AS m WHERE m.topic = l.topic AND m.seqid = l.seqid)
ORDER BY l.seqid DESC
LIMIT ?;

-- Search like SearchMonth/SearchTopicMonth over the month's legacy rows not copied yet. Without
-- a topic nothing narrows the scan but created_at: an admin tool, as on the month tables.

-- name: LegacySearch :many
SELECT sqlc.embed(l), CAST(COALESCE(w.conversation_id, c.id, 0) AS SIGNED) AS conversation_id
FROM im_group_messages AS l
LEFT JOIN im_migration_topics AS w ON w.topic = l.topic
LEFT JOIN t_conversations AS c ON c.topic = l.topic
WHERE l.created_at >= sqlc.arg(from_time) AND l.created_at < sqlc.arg(to_time)
    AND l.status = 'normal' AND l.content LIKE sqlc.arg(pattern) ESCAPE '!'
    AND NOT EXISTS (SELECT 1 FROM im_group_messages_tpl AS m WHERE m.topic = l.topic AND m.seqid = l.seqid)
ORDER BY l.created_at DESC, l.seqid DESC, l.message_id DESC
LIMIT ?;

-- name: LegacySearchTopic :many
SELECT sqlc.embed(l), CAST(COALESCE(w.conversation_id, c.id, 0) AS SIGNED) AS conversation_id
FROM im_group_messages AS l
LEFT JOIN im_migration_topics AS w ON w.topic = l.topic
LEFT JOIN t_conversations AS c ON c.topic = l.topic
WHERE l.topic = sqlc.arg(topic) AND l.created_at >= sqlc.arg(from_time) AND l.created_at < sqlc.arg(to_time)
    AND l.status = 'normal' AND l.content LIKE sqlc.arg(pattern) ESCAPE '!'
    AND NOT EXISTS (SELECT 1 FROM im_group_messages_tpl AS m WHERE m.topic = l.topic AND m.seqid = l.seqid)
ORDER BY l.created_at DESC, l.seqid DESC, l.message_id DESC
LIMIT ?;

-- Plan -------------------------------------------------------------------------------------

-- Full scans: the plan reads the whole legacy table once and writes nothing.
-- name: LegacyMonths :many
SELECT CAST(EXTRACT(YEAR_MONTH FROM created_at) AS SIGNED) AS shard_month,
    COUNT(*) AS row_count, COUNT(DISTINCT topic) AS topics,
    CAST(MIN(created_at) AS DATETIME(3)) AS min_created_at, CAST(MAX(created_at) AS DATETIME(3)) AS max_created_at
FROM im_group_messages
GROUP BY shard_month
ORDER BY shard_month;

-- name: LegacyTopicCount :one
SELECT COUNT(DISTINCT topic) AS topics FROM im_group_messages;

-- name: LegacyMaxMessageID :one
SELECT CAST(COALESCE(MAX(message_id), 0) AS SIGNED) AS max_id FROM im_group_messages;

-- Cutover ----------------------------------------------------------------------------------

-- The job row goes first: a second cutover waits on its key, then finds it taken.
-- name: InsertMigrationJob :exec
INSERT INTO im_migration_jobs (id, phase, cutover_time) VALUES (1, 'copying', NOW(3));

-- name: InsertInventory :exec
INSERT INTO im_migration_segments (topic, shard_month, min_seq, max_seq, row_count, min_created_at, max_created_at)
SELECT topic, EXTRACT(YEAR_MONTH FROM created_at), MIN(seqid), MAX(seqid), COUNT(*), MIN(created_at), MAX(created_at)
FROM im_group_messages
GROUP BY topic, EXTRACT(YEAR_MONTH FROM created_at);

-- name: InsertWatermarks :exec
INSERT INTO im_migration_topics (topic, cutover_seq, legacy_rows, conversation_id)
SELECT s.topic, MAX(s.max_seq), SUM(s.row_count), COALESCE(MAX(c.id), 0)
FROM im_migration_segments AS s
LEFT JOIN t_conversations AS c ON c.topic = s.topic
GROUP BY s.topic;

-- name: InsertMigrationMonths :exec
INSERT INTO im_migration_months (shard_month, legacy_rows, topics)
SELECT shard_month, SUM(row_count), COUNT(*) FROM im_migration_segments GROUP BY shard_month;

-- name: SetMigrationTotals :exec
UPDATE im_migration_jobs
SET legacy_rows = (SELECT CAST(COALESCE(SUM(legacy_rows), 0) AS SIGNED) FROM im_migration_topics),
    topics = (SELECT COUNT(*) FROM im_migration_topics)
WHERE id = 1;

-- Job --------------------------------------------------------------------------------------

-- name: MigrationJob :one
SELECT * FROM im_migration_jobs WHERE id = 1;

-- name: LockMigrationJob :one
SELECT * FROM im_migration_jobs WHERE id = 1 FOR UPDATE;

-- name: SetMigrationPhase :execrows
UPDATE im_migration_jobs
SET phase = sqlc.arg(to_phase), error = sqlc.narg(error), report = COALESCE(sqlc.narg(report), report)
WHERE id = 1 AND phase IN (sqlc.slice('from_phases'));

-- name: MarkMigrationPrepared :exec
UPDATE im_migration_jobs SET prepared = 1 WHERE id = 1;

-- name: RerunMigration :execrows
UPDATE im_migration_jobs
SET phase = 'copying', run = run + 1, cursor_created_at = '1970-01-01 00:00:00.000', cursor_message_id = 0,
    copy_done = 0, copied_rows = 0, skipped_rows = 0, failed_rows = 0, batches = 0, error = NULL
WHERE id = 1 AND phase IN (sqlc.slice('from_phases'));

-- name: ReverifyMigration :execrows
UPDATE im_migration_jobs
SET phase = IF(copy_done = 1, 'verifying', 'copying'), error = NULL
WHERE id = 1 AND phase IN (sqlc.slice('from_phases'));

-- name: ResetMonthProgress :exec
UPDATE im_migration_months SET copied_rows = 0, skipped_rows = 0, failed_rows = 0;

-- name: ResetMonthVerification :exec
UPDATE im_migration_months SET verify_status = '', verified_at = NULL;

-- name: ResetSegmentVerification :exec
UPDATE im_migration_segments SET verify_status = '', legacy_hash = '', month_hash = '', verified_at = NULL
WHERE verify_status <> '';

-- name: MigrationMonths :many
SELECT * FROM im_migration_months ORDER BY shard_month;

-- name: RecentBatches :many
SELECT rows_read, started_at, finished_at FROM im_migration_batches
WHERE run = ? ORDER BY id DESC LIMIT ?;

-- name: Watermarks :many
SELECT topic, cutover_seq FROM im_migration_topics WHERE topic > ? ORDER BY topic LIMIT ?;

-- name: MonthInventory :many
SELECT s.topic, s.min_seq, s.max_seq, s.row_count, t.cutover_seq
FROM im_migration_segments AS s
JOIN im_migration_topics AS t ON t.topic = s.topic
WHERE s.shard_month = ?;

-- Copy -------------------------------------------------------------------------------------

-- The next batch in (created_at, message_id) order after the cursor: a keyset page on the
-- index the job adds, never OFFSET. Only the keys: the rows themselves go from table to table
-- inside the server (CopyLegacyRows).
-- name: LegacyBatch :many
SELECT message_id, topic, seqid, created_at
FROM im_group_messages
WHERE created_at >= sqlc.arg(after_time)
    AND (created_at > sqlc.arg(after_time) OR message_id > sqlc.arg(after_id))
ORDER BY created_at, message_id
LIMIT ?;

-- name: LegacyKey :one
SELECT message_id, topic, seqid, created_at FROM im_group_messages WHERE topic = ? AND seqid = ?;

-- Month-table rows among ids, to tell copied rows from skipped ones.
-- name: StoredMessageIDs :many
SELECT message_id FROM im_group_messages_tpl WHERE message_id IN (sqlc.slice('ids'));

-- Copies legacy rows, every column, with their topic's conversation id as the reads give it;
-- edited_at stays NULL (the legacy table has none). IGNORE leaves out a row whose (topic, seq)
-- or client_msg_id another message of the month holds.
-- name: CopyLegacyRows :execrows
INSERT IGNORE INTO im_group_messages_tpl (
    message_id, topic, group_id, conversation_id, seqid, from_user, client_msg_id, msg_type, status,
    content, head, mentioned_user_ids, mention_all, reply_seqid, root_seqid, file_count, content_size,
    has_risk, audit_status, version, recalled_at, recalled_by, deleted_at, expires_at, created_at, updated_at
)
SELECT l.message_id, l.topic, l.group_id, CAST(COALESCE(w.conversation_id, c.id, 0) AS SIGNED), l.seqid, l.from_user,
    l.client_msg_id, l.msg_type, l.status, l.content, l.head, l.mentioned_user_ids, l.mention_all, l.reply_seqid,
    l.root_seqid, l.file_count, l.content_size, l.has_risk, l.audit_status, l.version, l.recalled_at, l.recalled_by,
    l.deleted_at, l.expires_at, l.created_at, l.updated_at
FROM im_group_messages AS l
LEFT JOIN im_migration_topics AS w ON w.topic = l.topic
LEFT JOIN t_conversations AS c ON c.topic = l.topic
WHERE l.message_id IN (sqlc.slice('ids'));

-- name: AdvanceMigrationCursor :execrows
UPDATE im_migration_jobs
SET cursor_created_at = sqlc.arg(end_time), cursor_message_id = sqlc.arg(end_id),
    copied_rows = copied_rows + sqlc.arg(copied), skipped_rows = skipped_rows + sqlc.arg(skipped),
    failed_rows = failed_rows + sqlc.arg(failed), batches = batches + 1
WHERE id = 1 AND run = sqlc.arg(run) AND cursor_created_at = sqlc.arg(start_time) AND cursor_message_id = sqlc.arg(start_id);

-- name: MarkCopyDone :exec
UPDATE im_migration_jobs SET copy_done = 1 WHERE id = 1 AND run = ?;

-- name: AddMonthProgress :exec
UPDATE im_migration_months
SET copied_rows = copied_rows + sqlc.arg(copied), skipped_rows = skipped_rows + sqlc.arg(skipped),
    failed_rows = failed_rows + sqlc.arg(failed)
WHERE shard_month = sqlc.arg(shard_month);

-- name: InsertMigrationBatch :exec
INSERT INTO im_migration_batches (
    run, start_created_at, start_message_id, end_created_at, end_message_id, rows_read, copied, skipped, failed,
    failed_keys, started_at, finished_at
) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?);

-- Verification -----------------------------------------------------------------------------

-- name: RecordSegmentVerification :exec
INSERT INTO im_migration_segments (
    topic, shard_month, min_seq, max_seq, row_count, min_created_at, max_created_at,
    verify_status, legacy_hash, month_hash, verified_at
) VALUES /*ROW*/(?, ?, 0, 0, 0, NOW(3), NOW(3), ?, ?, ?, NOW(3))
ON DUPLICATE KEY UPDATE
    verify_status = VALUES(verify_status), legacy_hash = VALUES(legacy_hash),
    month_hash = VALUES(month_hash), verified_at = VALUES(verified_at);

-- name: RecordMonthVerification :exec
UPDATE im_migration_months SET verify_status = ?, verified_at = NOW(3) WHERE shard_month = ?;
