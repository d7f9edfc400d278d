package memory

import (
	"context"
	"fmt"
	"iter"
	"maps"
	"slices"
	"time"

	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/route"
	"github.com/imdhq/imd/core/domain/seq"
	"github.com/imdhq/imd/core/domain/shard"
	"github.com/imdhq/imd/ports"
)

// MessageStore is the in-memory message store. It keeps the rules of the MySQL store: catalog
// states, dedup records with payload hashes, tombstones for duplicate attempts, seq.ErrTaken
// for taken seqs and for month ranges that would overlap. Page hides the ranges the DeleteLog
// over the same ShardStore recorded for PageQuery.Viewer.
type MessageStore struct {
	shards *ShardStore
}

var (
	_ ports.MessageStore = (*MessageStore)(nil)
	_ ports.QueuedMarks  = (*MessageStore)(nil)
)

// NewMessageStore returns a message store over the tenant data of shards.
func NewMessageStore(shards *ShardStore) *MessageStore { return &MessageStore{shards: shards} }

// Append stores the message and its dedup record and grows its route segment, all at once.
func (s *MessageStore) Append(_ context.Context, tenant string, m message.Message, hash string) (ports.AppendResult, error) {
	return s.append(tenant, m, hash, time.Time{})
}

// AppendFresh is Append of a new allocation made at instant at: it records the month active
// by at (shard.EarlierActive), and a new row in a month the catalog had switched past by then
// fails (shard.Superseding).
func (s *MessageStore) AppendFresh(_ context.Context, tenant string, m message.Message, hash string, at time.Time) (ports.AppendResult, error) {
	return s.append(tenant, m, hash, at)
}

func (s *MessageStore) append(tenant string, m message.Message, hash string, allocatedAt time.Time) (ports.AppendResult, error) {
	if err := m.ValidateAppend(); err != nil {
		return ports.AppendResult{}, err
	}
	m = cloneMessage(m)
	m.CreatedAt = m.CreatedAt.UTC().Truncate(time.Millisecond)
	if !m.EditedAt.IsZero() {
		m.EditedAt = m.EditedAt.UTC().Truncate(time.Millisecond)
	}
	s.shards.mu.Lock()
	defer s.shards.mu.Unlock()
	d := s.shards.db(tenant)
	// As the real store does, before anything else: the seq script handed the month out then.
	if e, ok := d.catalog[m.Month]; ok && !allocatedAt.IsZero() {
		e.activeSince, _ = shard.EarlierActive(e.activeSince, allocatedAt.UTC().Truncate(time.Millisecond))
	}
	if err := d.writable(m); err != nil {
		return ports.AppendResult{}, err
	}

	key := messageDedupKey{topic: m.Topic, from: m.From, clientMsgID: m.ClientMsgID}
	rec, known := d.dedup[key]
	var res ports.AppendResult
	row := m
	if known && rec.msgID == m.MsgID {
		existing := cloneMessage(d.tables[rec.month][topicSeqKey{m.Topic, rec.seq}])
		return ports.AppendResult{Outcome: ports.AlreadyStored, Existing: existing, Hash: rec.hash, Queued: rec.queued}, nil
	}
	if newer := shard.Superseding(m.Month, allocatedAt, d.switches()); newer != 0 {
		return ports.AppendResult{}, fmt.Errorf("append %s seq %d: %w", m.Topic, m.Seq, &shard.BehindError{Month: m.Month, Newer: newer})
	}
	if known {
		existing := cloneMessage(d.tables[rec.month][topicSeqKey{m.Topic, rec.seq}])
		res = ports.AppendResult{Outcome: ports.DuplicateClientMsgID, Existing: existing, Hash: rec.hash, Queued: rec.queued}
		if own, ok := d.tables[m.Month][topicSeqKey{m.Topic, m.Seq}]; ok && own.MsgID == m.MsgID {
			return res, nil // this attempt's tombstone, stored by the same attempt before
		}
		row = tombstone(m)
	} else {
		res = ports.AppendResult{Outcome: ports.Stored}
	}

	if err := d.put(row); err != nil {
		return ports.AppendResult{}, err
	}
	if !known {
		d.dedup[key] = messageDedupRecord{seq: m.Seq, month: m.Month, msgID: m.MsgID, hash: hash, expires: s.shards.millisNow().Add(s.shards.dedupTTL)}
	}
	return res, nil
}

// writable fails unless the month of m is registered and takes writes.
func (d *tenantMessages) writable(m message.Message) error {
	e, ok := d.catalog[m.Month]
	if !ok {
		return fmt.Errorf("append %s seq %d: %w: %s", m.Topic, m.Seq, shard.ErrMonthMissing, m.Month)
	}
	if !e.state.AcceptsWrites() {
		return fmt.Errorf("append %s seq %d: %w: %s is %s", m.Topic, m.Seq, shard.ErrMonthNotWritable, m.Month, e.state)
	}
	return nil
}

// switches is the catalog as the write transaction reads it: months, states, switch instants.
func (d *tenantMessages) switches() []shard.Info {
	out := make([]shard.Info, 0, len(d.catalog))
	for mo, e := range d.catalog {
		out = append(out, shard.Info{Month: mo, State: e.state, ActiveSince: e.activeSince})
	}
	return out
}

// put writes row into its month table and grows the route mirror, refusing a taken seq, a
// range that would overlap another month's and a msg_id stored before.
func (d *tenantMessages) put(row message.Message) error {
	if err := d.checkOverlap(row); err != nil {
		return err
	}
	table := d.tables[row.Month]
	if _, taken := table[topicSeqKey{row.Topic, row.Seq}]; taken {
		return fmt.Errorf("%w: %s seq %d in %s", seq.ErrTaken, row.Topic, row.Seq, row.Month)
	}
	for _, other := range table {
		if other.MsgID == row.MsgID {
			return fmt.Errorf("append %s seq %d: msg_id %d already stored in %s", row.Topic, row.Seq, row.MsgID, row.Month)
		}
	}
	table[topicSeqKey{row.Topic, row.Seq}] = row
	d.mirror.Grow(row.Topic, row.Month, row.Seq, row.CreatedAt)
	return nil
}

// MarkQueued flags the dedup record, if it still exists.
func (s *MessageStore) MarkQueued(_ context.Context, tenant, topicName string, from int64, clientMsgID string) error {
	s.shards.mu.Lock()
	defer s.shards.mu.Unlock()
	d := s.shards.db(tenant)
	key := messageDedupKey{topic: topicName, from: from, clientMsgID: clientMsgID}
	if rec, ok := d.dedup[key]; ok {
		rec.queued = true
		d.dedup[key] = rec
	}
	return nil
}

// tombstone closes the seq of a duplicate attempt: no content, no client_msg_id.
func tombstone(m message.Message) message.Message {
	return message.Message{
		Topic: m.Topic, GroupID: m.GroupID, ConversationID: m.ConversationID, Seq: m.Seq,
		MsgID: m.MsgID, From: m.From, Type: m.Type, Status: message.StatusDeleted, Version: 1,
		CreatedAt: m.CreatedAt, Month: m.Month,
	}
}

// checkOverlap fails when the topic's range in the row's month, grown by the row, would
// overlap its range in another month or pass it out of the months' order (route.OutOfOrder).
func (d *tenantMessages) checkOverlap(row message.Message) error {
	months := d.mirror[row.Topic]
	lo, hi := row.Seq, row.Seq
	if own, ok := months[row.Month]; ok {
		lo, hi = min(lo, own.MinSeq), max(hi, own.MaxSeq)
	}
	for _, seg := range months {
		if route.OutOfOrder(row.Month, lo, hi, seg) {
			return fmt.Errorf("%w: %s seqs %d-%d in %s out of month order with %d-%d in %s",
				seq.ErrTaken, row.Topic, lo, hi, row.Month, seg.MinSeq, seg.MaxSeq, seg.Month)
		}
	}
	return nil
}

// MaxSeq is the highest seq of the topic in the route mirror.
func (s *MessageStore) MaxSeq(_ context.Context, tenant, topicName string) (int64, error) {
	s.shards.mu.Lock()
	defer s.shards.mu.Unlock()
	return s.shards.db(tenant).mirror.Route(topicName).MaxSeq(), nil
}

// Segments reads the topic's route mirror.
func (s *MessageStore) Segments(_ context.Context, tenant, topicName string) (route.Route, error) {
	s.shards.mu.Lock()
	defer s.shards.mu.Unlock()
	return s.shards.db(tenant).mirror.Route(topicName), nil
}

// Get reads one message of one month.
func (s *MessageStore) Get(_ context.Context, tenant string, m month.Month, topicName string, sq int64) (message.Message, error) {
	s.shards.mu.Lock()
	defer s.shards.mu.Unlock()
	table, err := s.shards.db(tenant).table(m)
	if err != nil {
		return message.Message{}, fmt.Errorf("get %s seq %d: %w", topicName, sq, err)
	}
	msg, ok := table[topicSeqKey{topicName, sq}]
	if !ok {
		return message.Message{}, fmt.Errorf("get %s seq %d in %s: %w", topicName, sq, m, message.ErrNotFound)
	}
	return cloneMessage(msg), nil
}

// Page reads one month of a topic in seq order.
func (s *MessageStore) Page(_ context.Context, tenant string, m month.Month, q message.PageQuery) ([]message.Message, error) {
	s.shards.mu.Lock()
	defer s.shards.mu.Unlock()
	table, err := s.shards.db(tenant).table(m)
	if err != nil {
		return nil, fmt.Errorf("page %s: %w", q.Topic, err)
	}
	d := s.shards.db(tenant)
	return page(d, maps.Values(table), q, func(message.Message) bool { return true }), nil
}

// page is the query's page of rows that also pass keep, the viewer's deleted ranges hidden;
// the caller holds shards.mu.
func page(d *tenantMessages, rows iter.Seq[message.Message], q message.PageQuery, keep func(message.Message) bool) []message.Message {
	if q.Limit <= 0 {
		return nil
	}
	var out []message.Message
	for row := range rows {
		if q.Takes(row) && keep(row) && !d.hidden(q.Topic, q.Viewer, row.Seq) {
			out = append(out, row)
		}
	}
	slices.SortFunc(out, q.Compare)
	return clonedFirst(out, q.Limit)
}

// clonedFirst is a copy of the first n messages.
func clonedFirst(msgs []message.Message, n int) []message.Message {
	msgs = msgs[:min(len(msgs), n)]
	for i := range msgs {
		msgs[i] = cloneMessage(msgs[i])
	}
	return msgs
}

// table returns a registered month table, like the MySQL month-table wrapper.
func (d *tenantMessages) table(m month.Month) (map[topicSeqKey]message.Message, error) {
	name, err := m.Table()
	if err != nil {
		return nil, err
	}
	if _, ok := d.catalog[m]; !ok {
		return nil, fmt.Errorf("%w: %s not in catalog", shard.ErrMonthMissing, name)
	}
	return d.tables[m], nil
}

// cloneMessage copies the slices, so callers never share memory with the store.
func cloneMessage(m message.Message) message.Message {
	m.Content = slices.Clone(m.Content)
	m.Mentions = slices.Clone(m.Mentions)
	return m
}
