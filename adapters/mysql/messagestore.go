package mysql

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/imdhq/imd/adapters/mysql/sqlcdb"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/route"
	"github.com/imdhq/imd/ports"
)

// ErrClosed: the message store was closed.
var ErrClosed = errors.New("message store closed")

// Defaults of MessageStoreOptions.
const (
	DefaultMaxBatch      = 512
	DefaultMaxBatchBytes = 4 << 20 // well under MariaDB's default max_allowed_packet of 16 MB
	DefaultTxTimeout     = 10 * time.Second
	queuePerWriter       = 4096
)

// MessageStoreOptions tunes the group-commit writer; zero fields take the defaults.
type MessageStoreOptions struct {
	// MaxBatch caps the messages of one transaction; 1 turns group commit off.
	MaxBatch int
	// MaxBatchBytes caps the content bytes of one transaction.
	MaxBatchBytes int
	// TxTimeout bounds one batch transaction.
	TxTimeout time.Duration
	// DedupTTL is how long a dedup record outlives its message (seed 000 §3.5: 7–30 days); the
	// shard manager deletes records past it.
	DedupTTL time.Duration
	// Metrics receives persist_latency per committed batch transaction; nil records nothing.
	Metrics ports.Metrics
}

// MessageStore implements ports.MessageStore: month tables, dedup records and the route mirror
// of each tenant database, written by one group-commit writer per tenant and month.
type MessageStore struct {
	cluster *Cluster
	opts    MessageStoreOptions

	// sending is held shared while a request is queued and exclusively by Close, so no request
	// is queued to a writer that has stopped.
	sending sync.RWMutex
	closed  bool

	writersMu sync.Mutex
	writers   map[writerKey]*writer
	markers   map[string]*marker // per tenant
	writing   sync.WaitGroup
	marking   sync.WaitGroup

	stats writerStats
}

// WriterStats counts the work of the group-commit writers since the store was made.
type WriterStats struct {
	// Transactions is the number of committed write transactions.
	Transactions int64
	// Appends is the number of appends those transactions answered.
	Appends int64
	// MarkTransactions is the number of queued-mark transactions of their own: marks no batch
	// transaction carried (an idle writer, a failed batch).
	MarkTransactions int64
}

type writerStats struct {
	transactions, appends, markTransactions atomic.Int64
}

// Stats reports how well appends were batched: Appends/Transactions is the mean batch size.
func (s *MessageStore) Stats() WriterStats {
	return WriterStats{
		Transactions: s.stats.transactions.Load(), Appends: s.stats.appends.Load(),
		MarkTransactions: s.stats.markTransactions.Load(),
	}
}

type writerKey struct {
	tenant string
	month  month.Month
}

var _ ports.MessageStore = (*MessageStore)(nil)

// NewMessageStore returns a store over the provisioned tenants of c.
func NewMessageStore(c *Cluster, opts MessageStoreOptions) *MessageStore {
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = DefaultMaxBatch
	}
	if opts.MaxBatchBytes <= 0 {
		opts.MaxBatchBytes = DefaultMaxBatchBytes
	}
	if opts.TxTimeout <= 0 {
		opts.TxTimeout = DefaultTxTimeout
	}
	if opts.DedupTTL <= 0 {
		opts.DedupTTL = DefaultDedupTTL
	}
	return &MessageStore{cluster: c, opts: opts, writers: make(map[writerKey]*writer), markers: make(map[string]*marker)}
}

// Append queues the message to the writer of its tenant and month and waits for the batch
// transaction that carries it (DESIGN §4 step 5). If ctx ends first the message may still
// commit; a retry then finds it (AlreadyStored).
func (s *MessageStore) Append(ctx context.Context, tenant string, m message.Message, hash string) (ports.AppendResult, error) {
	if err := m.ValidateAppend(); err != nil {
		return ports.AppendResult{}, err
	}
	return s.write(ctx, tenant, &appendReq{ctx: ctx, msg: normalize(m), hash: hash, done: make(chan appendResp, 1)})
}

// AppendFresh is Append of a new allocation made at instant at: the batch refuses it a new
// row in a month the catalog had switched past by then (shard.ErrMonthBehind).
func (s *MessageStore) AppendFresh(ctx context.Context, tenant string, m message.Message, hash string, at time.Time) (ports.AppendResult, error) {
	if err := m.ValidateAppend(); err != nil {
		return ports.AppendResult{}, err
	}
	return s.write(ctx, tenant, &appendReq{ctx: ctx, msg: normalize(m), hash: hash, allocatedAt: at, done: make(chan appendResp, 1)})
}

// write hands req to the writer of its tenant and month and waits for its answer.
func (s *MessageStore) write(ctx context.Context, tenant string, req *appendReq) (ports.AppendResult, error) {
	m := req.msg
	t, err := s.cluster.tenant(tenant)
	if err != nil {
		return ports.AppendResult{}, err
	}
	// Fails for unregistered months before a writer exists for them.
	if _, err := t.months.table(ctx, m.Month); err != nil {
		return ports.AppendResult{}, fmt.Errorf("append %s seq %d: %w", m.Topic, m.Seq, err)
	}
	if err := s.enqueue(ctx, writerKey{tenant: tenant, month: m.Month}, t, req); err != nil {
		return ports.AppendResult{}, err
	}
	select {
	case r := <-req.done:
		return r.res, r.err
	case <-ctx.Done():
		return ports.AppendResult{}, ctx.Err()
	}
}

// normalize gives times the precision and zone of DATETIME(3) columns, so the caller's copy
// equals what a later read returns.
func normalize(m message.Message) message.Message {
	m.CreatedAt = m.CreatedAt.UTC().Truncate(time.Millisecond)
	if !m.EditedAt.IsZero() {
		m.EditedAt = m.EditedAt.UTC().Truncate(time.Millisecond)
	}
	return m
}

func (s *MessageStore) enqueue(ctx context.Context, key writerKey, t *tenantDB, req *appendReq) error {
	return submit(ctx, s, func() chan *appendReq { return s.writer(key, t).reqs }, req)
}

// submit hands req to the queue of the goroutine queue returns (started on first use), unless
// the store is closed or ctx ends first.
func submit[T any](ctx context.Context, s *MessageStore, queue func() chan T, req T) error {
	s.sending.RLock()
	defer s.sending.RUnlock()
	if s.closed {
		return ErrClosed
	}
	select {
	case queue() <- req:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *MessageStore) writer(key writerKey, t *tenantDB) *writer {
	s.writersMu.Lock()
	defer s.writersMu.Unlock()
	w, ok := s.writers[key]
	if !ok {
		w = &writer{
			opts: s.opts, stats: &s.stats, t: t, marks: s.markerLocked(key.tenant, t), month: key.month,
			reqs: make(chan *appendReq, queuePerWriter),
		}
		s.writers[key] = w
		s.writing.Go(w.run)
	}
	return w
}

// Close stops taking appends and marks, lets every writer commit what it has queued and the
// markers write the marks left, and waits for them. Closing again does nothing.
func (s *MessageStore) Close() error {
	s.sending.Lock()
	already := s.closed
	s.closed = true
	s.sending.Unlock()
	if already {
		return nil
	}
	s.writersMu.Lock()
	for _, w := range s.writers {
		close(w.reqs)
	}
	s.writersMu.Unlock()
	s.writing.Wait()
	// Only now: until the last batch has ended, a mark may still be waiting for it, or come
	// back from it failed.
	s.writersMu.Lock()
	for _, m := range s.markers {
		close(m.stop)
	}
	s.writersMu.Unlock()
	s.marking.Wait()
	return nil
}

// MaxSeq reads the highest seq of the topic from the route mirror.
func (s *MessageStore) MaxSeq(ctx context.Context, tenant, topicName string) (int64, error) {
	t, err := s.cluster.tenant(tenant)
	if err != nil {
		return 0, err
	}
	n, err := t.q.TopicMaxSeq(ctx, topicName)
	if err != nil {
		return 0, fmt.Errorf("max seq of %s: %w", topicName, err)
	}
	return n, nil
}

// Segments reads the topic's route mirror.
func (s *MessageStore) Segments(ctx context.Context, tenant, topicName string) (route.Route, error) {
	t, err := s.cluster.tenant(tenant)
	if err != nil {
		return nil, err
	}
	rows, err := t.q.TopicShards(ctx, topicName)
	if err != nil {
		return nil, fmt.Errorf("segments of %s: %w", topicName, err)
	}
	segs := make([]route.Segment, 0, len(rows))
	for _, r := range rows {
		m, err := month.Parse(r.ShardMonth)
		if err != nil {
			return nil, fmt.Errorf("segments of %s: %w", topicName, err)
		}
		segs = append(segs, route.Segment{
			Month: m, MinSeq: r.MinSeq, MaxSeq: r.MaxSeq, Count: r.MessageCount,
			MinCreatedAt: r.MinCreatedAt, MaxCreatedAt: r.MaxCreatedAt,
		})
	}
	return route.Normalize(segs), nil
}

// Get reads one message of one month.
func (s *MessageStore) Get(ctx context.Context, tenant string, m month.Month, topicName string, seq int64) (message.Message, error) {
	t, err := s.cluster.tenant(tenant)
	if err != nil {
		return message.Message{}, err
	}
	table, err := t.months.on(ctx, t.db, m)
	if err != nil {
		return message.Message{}, fmt.Errorf("get %s seq %d: %w", topicName, seq, err)
	}
	return getMessage(ctx, table, m, topicName, seq)
}

// getMessage reads one message through table, a DBTX bound to month m.
func getMessage(ctx context.Context, table sqlcdb.DBTX, m month.Month, topicName string, seq int64) (message.Message, error) {
	row, err := sqlcdb.New(table).GetMessage(ctx, sqlcdb.GetMessageParams{Topic: topicName, Seqid: seq})
	if errors.Is(err, sql.ErrNoRows) {
		return message.Message{}, fmt.Errorf("get %s seq %d in %s: %w", topicName, seq, m, message.ErrNotFound)
	}
	if err != nil {
		return message.Message{}, fmt.Errorf("get %s seq %d in %s: %w", topicName, seq, m, err)
	}
	return fromRow(row, m)
}

// Page reads one month of a topic in seq order, hiding the viewer's deleted ranges.
func (s *MessageStore) Page(ctx context.Context, tenant string, m month.Month, q message.PageQuery) ([]message.Message, error) {
	t, err := s.cluster.tenant(tenant)
	if err != nil {
		return nil, err
	}
	table, err := t.months.on(ctx, t.db, m)
	if err != nil {
		return nil, fmt.Errorf("page %s: %w", q.Topic, err)
	}
	mq := sqlcdb.New(table)
	if q.Limit <= 0 {
		return nil, nil
	}
	after, before := q.Bounds()
	var includeDeleted int64
	if q.IncludeDeleted {
		includeDeleted = 1
	}
	limit := int32(min(q.Limit, math.MaxInt32))
	var rows []sqlcdb.ImGroupMessagesTpl
	if q.Desc {
		rows, err = mq.PageMessagesDesc(ctx, sqlcdb.PageMessagesDescParams{
			Viewer: q.Viewer, Topic: q.Topic, After: after, Before: before,
			IncludeDeleted: includeDeleted, Limit: limit,
		})
	} else {
		rows, err = mq.PageMessagesAsc(ctx, sqlcdb.PageMessagesAscParams{
			Viewer: q.Viewer, Topic: q.Topic, After: after, Before: before,
			IncludeDeleted: includeDeleted, Limit: limit,
		})
	}
	if err != nil {
		return nil, fmt.Errorf("page %s in %s: %w", q.Topic, m, err)
	}
	return fromRows(rows, m)
}

// messageRow is the month-table row of a new message.
func messageRow(m message.Message) (sqlcdb.InsertMessagesParams, error) {
	var mentions sql.NullString
	if len(m.Mentions) > 0 {
		b, err := json.Marshal(m.Mentions)
		if err != nil {
			return sqlcdb.InsertMessagesParams{}, fmt.Errorf("encode mentions: %w", err)
		}
		mentions = sql.NullString{String: string(b), Valid: true}
	}
	return sqlcdb.InsertMessagesParams{
		MessageID: m.MsgID, Topic: m.Topic, GroupID: m.GroupID, ConversationID: m.ConversationID,
		Seqid: m.Seq, FromUser: m.From,
		ClientMsgID: sql.NullString{String: m.ClientMsgID, Valid: true},
		MsgType:     m.Type, Status: string(m.Status),
		Content:          sql.NullString{String: string(m.Content), Valid: len(m.Content) > 0},
		MentionedUserIds: mentions, MentionAll: m.MentionAll,
		ReplySeqid:  sql.NullInt64{Int64: m.ReplySeq, Valid: m.ReplySeq > 0},
		ContentSize: int32(len(m.Content)), Version: int32(m.Version),
		EditedAt:  sql.NullTime{Time: m.EditedAt, Valid: !m.EditedAt.IsZero()},
		CreatedAt: m.CreatedAt, UpdatedAt: m.CreatedAt,
	}, nil
}

// tombstoneRow closes the seq of an attempt that turned out to be a duplicate, so no seq hole
// stays (DESIGN §4): no content, no client_msg_id, status deleted.
func tombstoneRow(m message.Message) sqlcdb.InsertMessagesParams {
	return sqlcdb.InsertMessagesParams{
		MessageID: m.MsgID, Topic: m.Topic, GroupID: m.GroupID, ConversationID: m.ConversationID,
		Seqid: m.Seq, FromUser: m.From, MsgType: m.Type, Status: string(message.StatusDeleted),
		Version: 1, DeletedAt: sql.NullTime{Time: m.CreatedAt, Valid: true},
		CreatedAt: m.CreatedAt, UpdatedAt: m.CreatedAt,
	}
}

// fromRows is fromRow of every row of a month's page.
func fromRows(rows []sqlcdb.ImGroupMessagesTpl, m month.Month) ([]message.Message, error) {
	out := make([]message.Message, 0, len(rows))
	for _, r := range rows {
		msg, err := fromRow(r, m)
		if err != nil {
			return nil, err
		}
		out = append(out, msg)
	}
	return out, nil
}

func fromRow(r sqlcdb.ImGroupMessagesTpl, m month.Month) (message.Message, error) {
	msg := message.Message{
		Topic: r.Topic, GroupID: r.GroupID, ConversationID: r.ConversationID, Seq: r.Seqid,
		MsgID: r.MessageID, From: r.FromUser, ClientMsgID: r.ClientMsgID.String, Type: r.MsgType,
		MentionAll: r.MentionAll, ReplySeq: r.ReplySeqid.Int64, Status: message.Status(r.Status),
		Version: int(r.Version), CreatedAt: r.CreatedAt.UTC(), Month: m,
	}
	if r.Content.Valid {
		msg.Content = json.RawMessage(r.Content.String)
	}
	if r.MentionedUserIds.Valid {
		if err := json.Unmarshal([]byte(r.MentionedUserIds.String), &msg.Mentions); err != nil {
			return message.Message{}, fmt.Errorf("decode mentions of %s seq %d: %w", r.Topic, r.Seqid, err)
		}
	}
	msg.EditedAt = nullTimeUTC(r.EditedAt)
	return msg, nil
}
