package mysql

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/imdhq/imd/adapters/mysql/sqlcdb"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/route"
	"github.com/imdhq/imd/core/domain/seq"
	"github.com/imdhq/imd/core/domain/shard"
	"github.com/imdhq/imd/ports"
)

// DefaultDedupTTL is how long a dedup record outlives its message's retries when
// MessageStoreOptions leaves it unset (seed 000 §3.5: 7–30 days).
const DefaultDedupTTL = 30 * 24 * time.Hour

// singleAttempts bounds the retries of one request alone after its batch failed.
const singleAttempts = 3

type appendReq struct {
	ctx  context.Context
	msg  message.Message
	hash string
	// hole: msg is the seq-hole sweeper's tombstone, stored without a dedup record.
	hole bool
	// allocatedAt: the seq script just allocated msg's seq and month at this Redis instant
	// (MessageStore.AppendFresh); zero for every other write.
	allocatedAt time.Time
	done        chan appendResp // buffered: the writer never blocks on a caller that left
}

type appendResp struct {
	res ports.AppendResult
	err error
}

func (r *appendReq) answer(res ports.AppendResult, err error) {
	r.done <- appendResp{res: res, err: err}
}

func (r *appendReq) dedupKey() dedupKey {
	return dedupKey{topic: r.msg.Topic, from: r.msg.From, clientMsgID: r.msg.ClientMsgID}
}

type dedupKey struct {
	topic       string
	from        int64
	clientMsgID string
}

type topicSeq struct {
	topic string
	seq   int64
}

// batchesInFlight is how many batch transactions one writer runs at once. With two, the next
// batch reads and writes while the last one waits for its COMMIT, and the COMMIT of a batch
// (the redo log flush) no longer holds up everything queued behind it. Batches that share a
// topic take turns on its mirror row, which every batch locks in topic order, so they queue
// rather than deadlock; a request that two batches carry at once (a client's retry racing
// its first attempt) fails one of them, which then writes each of its requests alone, as
// after any batch failure.
const batchesInFlight = 2

// writer is the group-commit writer of one tenant and month. Batching is opportunistic: while
// transactions run, new requests queue; the next transaction takes all of them (up to the
// limits) as soon as one of the batchesInFlight slots is free. A lone request is written at
// once, never held back to wait for company.
type writer struct {
	opts  MessageStoreOptions
	stats *writerStats
	t     *tenantDB
	marks *marker // the tenant's, carried by the batch transactions
	month month.Month
	reqs  chan *appendReq // closed by MessageStore.Close
	// activeSince is the month's ActiveSince as this writer's last batch read it, in Unix
	// milliseconds (0: not known yet). The catalog's only goes down, so it is never below it.
	activeSince atomic.Int64
}

// run collects and commits batches until reqs is closed and drained, then waits for the
// batches still committing.
func (w *writer) run() {
	slots := make(chan struct{}, batchesInFlight)
	var committing sync.WaitGroup
	defer committing.Wait()
	var pending []*appendReq // requests left out of the last batch
	open := true
	for open || len(pending) > 0 {
		if len(pending) == 0 {
			r, ok := <-w.reqs
			if !ok {
				return
			}
			pending = append(pending, r)
		}
		// Counted from here, not from the slot: a mark that arrives while every slot is busy
		// waits for this batch rather than taking a transaction of its own.
		w.marks.batchComing()
		// The slot first: what queues while every slot is busy joins this batch.
		slots <- struct{}{}
		var batch []*appendReq
		batch, pending, open = w.collect(pending, open)
		if len(batch) == 0 {
			<-slots
			w.marks.batchEnded()
			continue
		}
		committing.Go(func() {
			defer func() {
				<-slots
				w.marks.batchEnded()
			}()
			w.commit(batch)
		})
	}
}

// collect builds the next batch from the left-over requests, then from the queue without
// waiting. A request that shares a dedup key, a (topic, seq) or a msg_id with one already in
// the batch waits for the next batch, where it sees the first one committed.
func (w *writer) collect(pending []*appendReq, open bool) (batch, rest []*appendReq, stillOpen bool) {
	keys := make(map[dedupKey]bool)
	seqs := make(map[topicSeq]bool)
	ids := make(map[int64]bool)
	bytes := 0
	full := func() bool { return len(batch) >= w.opts.MaxBatch || bytes >= w.opts.MaxBatchBytes }
	take := func(r *appendReq) {
		if err := r.ctx.Err(); err != nil {
			r.answer(ports.AppendResult{}, err) // the caller left before anything was written
			return
		}
		k, ts := r.dedupKey(), topicSeq{r.msg.Topic, r.msg.Seq}
		if full() || keys[k] || seqs[ts] || ids[r.msg.MsgID] {
			rest = append(rest, r)
			return
		}
		keys[k], seqs[ts], ids[r.msg.MsgID] = true, true, true
		bytes += len(r.msg.Content)
		batch = append(batch, r)
	}
	for _, r := range pending {
		take(r)
	}
	for open && !full() {
		select {
		case r, ok := <-w.reqs:
			if !ok {
				open = false
				continue
			}
			take(r)
		default:
			return batch, rest, open
		}
	}
	return batch, rest, open
}

// commit writes a batch in one transaction and answers every request. When the batch fails
// for a reason that may belong to one request only (a seq taken, a duplicate key, a
// deadlock), each request is retried in a transaction of its own, so innocent ones succeed.
func (w *writer) commit(batch []*appendReq) {
	if len(batch) == 1 {
		batch[0].answer(w.writeAlone(batch[0], true))
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), w.opts.TxTimeout)
	answers, err := w.write(ctx, batch, true)
	cancel()
	if err == nil {
		for i, r := range batch {
			r.done <- answers[i]
		}
		return
	}
	if mayBelongToOne(err) {
		for _, r := range batch {
			r.answer(w.writeAlone(r, false))
		}
		return
	}
	for _, r := range batch {
		r.answer(ports.AppendResult{}, err)
	}
}

func mayBelongToOne(err error) bool {
	return errors.Is(err, seq.ErrTaken) || isDuplicate(err, "") || isTransient(err)
}

// writeAlone writes r in a transaction of its own; with carryMarks the first attempt also
// carries the tenant's waiting marks (a retry does not: the marker writes them once the
// attempt failed).
func (w *writer) writeAlone(r *appendReq, carryMarks bool) (ports.AppendResult, error) {
	var err error
	for range singleAttempts {
		ctx, cancel := context.WithTimeout(context.Background(), w.opts.TxTimeout)
		var answers []appendResp
		answers, err = w.write(ctx, []*appendReq{r}, carryMarks)
		cancel()
		carryMarks = false
		switch {
		case err == nil:
			return answers[0].res, answers[0].err
		case isDuplicate(err, keyTopicSeq):
			return ports.AppendResult{}, fmt.Errorf("%w: %s seq %d in %s: %v", seq.ErrTaken, r.msg.Topic, r.msg.Seq, w.month, err)
		case isTransient(err), isDuplicate(err, ""):
			// A deadlock, or another node's dedup record that appeared after our read: the next
			// attempt reads it.
			continue
		}
		return ports.AppendResult{}, err
	}
	return ports.AppendResult{}, err
}

// write runs one batch transaction (DESIGN §4 step 5). It fails as a whole, or answers each
// request, in request order. With carryMarks it also writes the tenant's waiting marks, queued
// and delivered, and settles them once the transaction has ended.
func (w *writer) write(ctx context.Context, reqs []*appendReq, carryMarks bool) (answers []appendResp, err error) {
	if err := w.recordActive(ctx, reqs); err != nil {
		return nil, err
	}
	// READ COMMITTED: the locking reads below then lock only rows that exist, not gaps, which
	// would make concurrent batches deadlock on inserts.
	began := time.Now()
	tx, err := w.t.db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	if err != nil {
		return nil, fmt.Errorf("begin batch in %s: %w", w.month, err)
	}
	var marks carried
	defer func() {
		if err != nil {
			tx.Rollback()
		}
		// After the rollback: the marker's own transaction would wait for its locks.
		w.marks.settle(marks, err)
		// A table dropped behind the catalog's back is as missing as one never created: the
		// send answers 50301 for a retry and counts it for the alert (seed 000 §12 item 11).
		if table, _ := w.month.Table(); isNoSuchTable(err, table) {
			err = fmt.Errorf("%w: %s: %v", shard.ErrMonthMissing, table, err)
		}
	}()
	q := sqlcdb.New(tx)
	later, err := w.checkWritable(ctx, q)
	if err != nil {
		return nil, err
	}
	if since := later[0].ActiveSince; !since.IsZero() {
		w.activeSince.Store(since.UnixMilli())
	}
	table, err := w.t.months.on(ctx, tx, w.month)
	if err != nil {
		return nil, err
	}
	// The marks' rows are locked here, after the catalog's and before the batch's own dedup
	// records, the mirror rows and the inserts, in primary-key order like every mark UPDATE.
	// A batch waiting on them holds no mirror row yet, so it queues behind this one; the
	// cycles left need one batch to resend what another marks (and the reverse, or the
	// same request in both), which InnoDB breaks and the writer retries alone.
	if carryMarks {
		if marks.queued, err = carryWaiting(ctx, w.marks, &w.marks.queued, tx); err != nil {
			return nil, err
		}
	}
	b, err := w.plan(ctx, tx, q, reqs, later)
	if err != nil {
		return nil, err
	}
	if len(b.rows) > 0 {
		if err := w.checkOverlap(ctx, q, b.ranges); err != nil {
			return nil, err
		}
		if err := b.apply(ctx, tx, table, w.month); err != nil {
			return nil, err
		}
	}
	// The delivered marks' member rows are locked last, in key order like every delivered
	// mark UPDATE: after the conversation rows, the order in which a new conversation's
	// transaction inserts its rows; no other transaction locks a member row and then a row
	// the batch takes (DESIGN, issue 30).
	if carryMarks {
		if marks.delivered, err = carryWaiting(ctx, w.marks, &w.marks.delivered, tx); err != nil {
			return nil, err
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("commit batch in %s: %w", w.month, err)
	}
	if w.opts.Metrics != nil {
		w.opts.Metrics.Observe("persist_latency", time.Since(began).Seconds())
	}
	w.stats.transactions.Add(1)
	w.stats.appends.Add(int64(len(reqs)))
	return b.answers, nil
}

// recordActive records the month active by the earliest allocation instant of the batch's
// fresh requests when the catalog may hold a later instant or none (the first writes after an
// early switch that is not recorded yet, and a writer's first batch). The seq script handed
// the month out at that instant, so the record is true whatever the batch then does; once any
// message of the month is stored, no later allocation in the month before is taken, whatever
// Redis forgets (shard.Superseding). It runs before the batch transaction: recorded inside
// it, the batch would upgrade its shared lock on the catalog row and deadlock with the shard
// manager's own updates of the row.
func (w *writer) recordActive(ctx context.Context, reqs []*appendReq) error {
	var activeBy time.Time
	for _, r := range reqs {
		if !r.allocatedAt.IsZero() {
			activeBy, _ = shard.EarlierActive(activeBy, r.allocatedAt.UTC().Truncate(time.Millisecond))
		}
	}
	if activeBy.IsZero() {
		return nil
	}
	if known := w.activeSince.Load(); known != 0 {
		if _, moved := shard.EarlierActive(time.UnixMilli(known).UTC(), activeBy); !moved {
			return nil
		}
	}
	if err := recordActive(ctx, w.t.q, w.month, activeBy); err != nil {
		return fmt.Errorf("record %s active by %s: %w", w.month, activeBy.Format(time.RFC3339Nano), err)
	}
	// Not kept as known: a month missing from the catalog took no record. The batch's read
	// of the row tells.
	return nil
}

// checkWritable reads the catalog states of the month and the later ones under a shared
// lock, so a state change waits for the batch (seed 000 §5.3: sealing takes late writes,
// sealed does not; a recorded switch comes before or after the batch, never during it). It
// returns those rows, for shard.Superseding.
func (w *writer) checkWritable(ctx context.Context, q *sqlcdb.Queries) ([]shard.Info, error) {
	rows, err := q.MonthStatesForWrite(ctx, w.month.String())
	if err != nil {
		return nil, fmt.Errorf("catalog state of %s: %w", w.month, err)
	}
	if len(rows) == 0 || rows[0].ShardMonth != w.month.String() {
		return nil, fmt.Errorf("%w: %s", shard.ErrMonthMissing, w.month)
	}
	if state := shard.State(rows[0].Status); !state.AcceptsWrites() {
		return nil, fmt.Errorf("%w: %s is %s", shard.ErrMonthNotWritable, w.month, state)
	}
	later := make([]shard.Info, 0, len(rows))
	for _, r := range rows {
		m, err := month.Parse(r.ShardMonth)
		if err != nil {
			return nil, fmt.Errorf("catalog row %q: %w", r.ShardMonth, err)
		}
		later = append(later, shard.Info{Month: m, State: shard.State(r.Status), ActiveSince: nullTimeUTC(r.ActiveSince)})
	}
	return later, nil
}

// batchWrite is what a batch will insert, and the answers it will give.
type batchWrite struct {
	answers []appendResp
	rows    []sqlcdb.InsertMessagesParams // new messages and tombstones
	dedup   []sqlcdb.InsertDedupParams
	ranges  map[string]*seqRange // per topic, over rows
	latest  map[int64]sqlcdb.AdvanceConversationsParams
}

type seqRange struct {
	min, max, count int64
	first, last     time.Time
}

// plan reads the dedup records of the batch under lock and sorts every request into a new
// message, a retry of a stored one, or a reused client_msg_id whose seq becomes a tombstone.
// A fresh allocation that would write a row in a month the catalog had already switched past
// at its instant (shard.Superseding over later) is refused alone (shard.ErrMonthBehind).
func (w *writer) plan(ctx context.Context, tx *sql.Tx, q *sqlcdb.Queries, reqs []*appendReq, later []shard.Info) (*batchWrite, error) {
	known, err := w.lockDedup(ctx, tx, reqs)
	if err != nil {
		return nil, err
	}
	b := &batchWrite{
		answers: make([]appendResp, len(reqs)),
		ranges:  make(map[string]*seqRange),
		latest:  make(map[int64]sqlcdb.AdvanceConversationsParams),
	}
	expires := time.Now().UTC().Add(w.opts.DedupTTL).Truncate(time.Millisecond)
	for i, r := range reqs {
		m := r.msg
		if r.hole {
			b.answers[i].res = ports.AppendResult{Outcome: ports.Stored}
			b.addRow(tombstoneRow(m))
			continue
		}
		d, recorded := known[r.dedupKey()]
		var existing message.Message
		if recorded {
			var err error
			if existing, err = w.readRecorded(ctx, tx, d); err != nil {
				// Only this request is stuck (say, its record points to a dropped month); a
				// failed statement does not abort the transaction, so the others go on.
				b.answers[i].err = err
				continue
			}
			if d.MessageID.Valid && d.MessageID.Int64 == m.MsgID {
				b.answers[i].res = ports.AppendResult{Outcome: ports.AlreadyStored, Existing: existing, Hash: d.PayloadHash, Queued: d.Status == dedupQueued}
				continue
			}
		}
		// A new row, or the tombstone of a seq whose client_msg_id another message holds.
		if newer := shard.Superseding(w.month, r.allocatedAt, later); newer != 0 {
			b.answers[i].err = w.behind(m, newer)
			continue
		}
		if recorded {
			again, err := w.tombstoned(ctx, tx, m)
			if err != nil {
				b.answers[i].err = err
				continue
			}
			b.answers[i].res = ports.AppendResult{Outcome: ports.DuplicateClientMsgID, Existing: existing, Hash: d.PayloadHash, Queued: d.Status == dedupQueued}
			if !again {
				b.addRow(tombstoneRow(m))
			}
			continue
		}
		row, err := messageRow(m)
		if err != nil {
			return nil, err
		}
		b.answers[i].res = ports.AppendResult{Outcome: ports.Stored}
		b.addRow(row)
		b.dedup = append(b.dedup, sqlcdb.InsertDedupParams{
			Topic: m.Topic, FromUser: m.From, ClientMsgID: m.ClientMsgID, Seqid: m.Seq,
			ShardMonth: w.month.String(), MessageID: sql.NullInt64{Int64: m.MsgID, Valid: true},
			PayloadHash: r.hash, Status: dedupStored, ExpiresAt: expires,
		})
		if m.ConversationID != 0 {
			if cur, ok := b.latest[m.ConversationID]; !ok || m.Seq > cur.LastSeq {
				b.latest[m.ConversationID] = sqlcdb.AdvanceConversationsParams{
					ID: m.ConversationID, LastSeq: m.Seq, LastMsgID: m.MsgID, LastMsgAt: m.CreatedAt,
				}
			}
		}
	}
	return b, nil
}

func (w *writer) behind(m message.Message, newer month.Month) error {
	return fmt.Errorf("append %s seq %d: %w", m.Topic, m.Seq, &shard.BehindError{Month: w.month, Newer: newer})
}

func (b *batchWrite) addRow(row sqlcdb.InsertMessagesParams) {
	b.rows = append(b.rows, row)
	r, ok := b.ranges[row.Topic]
	if !ok {
		b.ranges[row.Topic] = &seqRange{min: row.Seqid, max: row.Seqid, count: 1, first: row.CreatedAt, last: row.CreatedAt}
		return
	}
	r.min, r.max, r.count = min(r.min, row.Seqid), max(r.max, row.Seqid), r.count+1
	if row.CreatedAt.Before(r.first) {
		r.first = row.CreatedAt
	}
	if row.CreatedAt.After(r.last) {
		r.last = row.CreatedAt
	}
}

// lockDedup reads the batch's dedup records with one locking read.
func (w *writer) lockDedup(ctx context.Context, tx *sql.Tx, reqs []*appendReq) (map[dedupKey]sqlcdb.LockDedupRow, error) {
	lookup := rowBatch{sep: sepUnion}
	for _, r := range reqs {
		if r.hole {
			continue
		}
		p := sqlcdb.LockDedupParams{Topic: r.msg.Topic, FromUser: r.msg.From, ClientMsgID: r.msg.ClientMsgID}
		if err := lookup.add(func(q *sqlcdb.Queries) error { _, err := q.LockDedup(ctx, p); return err }); err != nil {
			return nil, err
		}
	}
	if lookup.rows == 0 {
		return nil, nil
	}
	q, err := lookup.replay(tx)
	if err != nil {
		return nil, err
	}
	rows, err := q.LockDedup(ctx, sqlcdb.LockDedupParams{})
	if err != nil {
		return nil, fmt.Errorf("read dedup records: %w", err)
	}
	known := make(map[dedupKey]sqlcdb.LockDedupRow, len(rows))
	for _, d := range rows {
		known[dedupKey{topic: d.Topic, from: d.FromUser, clientMsgID: d.ClientMsgID}] = d
	}
	return known, nil
}

// readRecorded reads the message a dedup record points to, in whatever month it landed.
// tombstoned reports whether this duplicate attempt's tombstone is stored already: a resend
// whose idempotency record Redis lost and made again names the attempt that was tombstoned
// (DESIGN §1.13), and a second tombstone of one msg_id would fail the batch for good.
func (w *writer) tombstoned(ctx context.Context, tx *sql.Tx, m message.Message) (bool, error) {
	table, err := w.t.months.on(ctx, tx, w.month)
	if err != nil {
		return false, fmt.Errorf("tombstone of %s seq %d: %w", m.Topic, m.Seq, err)
	}
	got, err := getMessage(ctx, table, w.month, m.Topic, m.Seq)
	if errors.Is(err, message.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return got.MsgID == m.MsgID, nil
}

func (w *writer) readRecorded(ctx context.Context, tx *sql.Tx, d sqlcdb.LockDedupRow) (message.Message, error) {
	m, err := month.Parse(d.ShardMonth)
	if err != nil {
		return message.Message{}, fmt.Errorf("dedup record of %s seq %d: %w", d.Topic, d.Seqid, err)
	}
	table, err := w.t.months.on(ctx, tx, m)
	if err != nil {
		return message.Message{}, fmt.Errorf("dedup record of %s seq %d: %w", d.Topic, d.Seqid, err)
	}
	return getMessage(ctx, table, m, d.Topic, d.Seqid)
}

// checkOverlap fails with seq.ErrTaken when a topic's range in this month, grown by the batch,
// would intersect its range in another month or pass it out of the months' order: month
// segments never overlap and follow the months (seed 000 §12.15, route.OutOfOrder), so such a
// seq belongs to someone else, or came from a counter that stepped back. The read locks the
// topics' mirror rows, so another month's writer of the same topic is seen committed, not
// missed.
func (w *writer) checkOverlap(ctx context.Context, q *sqlcdb.Queries, ranges map[string]*seqRange) error {
	topics := make([]string, 0, len(ranges))
	for t := range ranges {
		topics = append(topics, t)
	}
	slices.Sort(topics)
	segs, err := q.LockTopicShards(ctx, topics)
	if err != nil {
		return fmt.Errorf("read route mirror: %w", err)
	}
	grown := make(map[string][2]int64, len(ranges))
	for t, r := range ranges {
		grown[t] = [2]int64{r.min, r.max}
	}
	own := w.month.String()
	for _, s := range segs {
		if s.ShardMonth == own {
			g := grown[s.Topic]
			grown[s.Topic] = [2]int64{min(g[0], s.MinSeq), max(g[1], s.MaxSeq)}
		}
	}
	for _, s := range segs {
		other, err := month.Parse(s.ShardMonth)
		if err != nil {
			return fmt.Errorf("route mirror of %s: %w", s.Topic, err)
		}
		g := grown[s.Topic]
		if route.OutOfOrder(w.month, g[0], g[1], route.Segment{Month: other, MinSeq: s.MinSeq, MaxSeq: s.MaxSeq}) {
			return fmt.Errorf("%w: %s seqs %d-%d in %s out of month order with %d-%d in %s",
				seq.ErrTaken, s.Topic, g[0], g[1], own, s.MinSeq, s.MaxSeq, s.ShardMonth)
		}
	}
	return nil
}

// apply sends the batch: dedup records, month-table rows, one mirror upsert row per topic and
// one conversation update row per conversation — four statements whatever the batch size.
// Rows go in key order so concurrent transactions lock in the same order.
func (b *batchWrite) apply(ctx context.Context, tx *sql.Tx, table sqlcdb.DBTX, m month.Month) error {
	if len(b.dedup) > 0 {
		ins := rowBatch{sep: sepValues}
		for _, p := range b.dedup {
			if err := ins.add(func(q *sqlcdb.Queries) error { return q.InsertDedup(ctx, p) }); err != nil {
				return err
			}
		}
		if err := ins.exec(ctx, tx); err != nil {
			return fmt.Errorf("insert dedup records: %w", err)
		}
	}

	msgs := rowBatch{sep: sepValues}
	for _, p := range b.rows {
		if err := msgs.add(func(q *sqlcdb.Queries) error { return q.InsertMessages(ctx, p) }); err != nil {
			return err
		}
	}
	if err := msgs.exec(ctx, table); err != nil {
		return fmt.Errorf("insert messages into %s: %w", m, err)
	}

	mirror := rowBatch{sep: sepValues}
	for _, t := range slices.Sorted(maps.Keys(b.ranges)) {
		r := b.ranges[t]
		p := sqlcdb.UpsertTopicShardsParams{
			Topic: t, ShardMonth: m.String(), MinSeq: r.min, MaxSeq: r.max, MessageCount: r.count,
			MinCreatedAt: r.first, MaxCreatedAt: r.last,
		}
		if err := mirror.add(func(q *sqlcdb.Queries) error { return q.UpsertTopicShards(ctx, p) }); err != nil {
			return err
		}
	}
	if err := mirror.exec(ctx, tx); err != nil {
		return fmt.Errorf("upsert route mirror: %w", err)
	}

	if len(b.latest) == 0 {
		return nil
	}
	convs := rowBatch{sep: sepUnion}
	for _, p := range slices.SortedFunc(maps.Values(b.latest), func(a, b sqlcdb.AdvanceConversationsParams) int {
		return cmp.Compare(a.ID, b.ID)
	}) {
		if err := convs.add(func(q *sqlcdb.Queries) error { return q.AdvanceConversations(ctx, p) }); err != nil {
			return err
		}
	}
	if err := convs.exec(ctx, tx); err != nil {
		return fmt.Errorf("advance conversations: %w", err)
	}
	return nil
}
