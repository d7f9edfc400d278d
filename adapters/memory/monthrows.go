package memory

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/imdhq/imd/core/domain/archive"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/ports"
)

// MonthRows is ports.MonthRows and ports.MonthCatalog over a ShardStore's data. Rows are kept
// as messages here, so a record carries the columns a message has and leaves the others at
// their defaults, which is what the MySQL store writes for them too.
type MonthRows struct {
	shards *ShardStore
}

var (
	_ ports.MonthRows    = (*MonthRows)(nil)
	_ ports.MonthCatalog = (*MonthRows)(nil)
)

// NewMonthRows returns month-row access to the tenant data of shards.
func NewMonthRows(shards *ShardStore) *MonthRows { return &MonthRows{shards: shards} }

func (s *MonthRows) Rows(_ context.Context, tenant string, m month.Month, topicName string, after int64, limit int) ([]archive.Record, error) {
	s.shards.mu.Lock()
	defer s.shards.mu.Unlock()
	table, err := s.shards.db(tenant).table(m)
	if err != nil {
		return nil, fmt.Errorf("rows of %s: %w", topicName, err)
	}
	var msgs []message.Message
	for k, msg := range table {
		if k.topic == topicName && k.seq > after {
			msgs = append(msgs, msg)
		}
	}
	slices.SortFunc(msgs, func(a, b message.Message) int { return cmp.Compare(a.Seq, b.Seq) })
	msgs = msgs[:min(len(msgs), limit)]
	out := make([]archive.Record, len(msgs))
	for i, msg := range msgs {
		if out[i], err = archive.RecordOf(msg); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (s *MonthRows) Count(_ context.Context, tenant string, m month.Month) (int64, error) {
	s.shards.mu.Lock()
	defer s.shards.mu.Unlock()
	table, err := s.shards.db(tenant).table(m)
	if err != nil {
		return 0, fmt.Errorf("count %s: %w", m, err)
	}
	return int64(len(table)), nil
}

func (s *MonthRows) TableExists(_ context.Context, tenant string, m month.Month) (bool, error) {
	s.shards.mu.Lock()
	defer s.shards.mu.Unlock()
	_, ok := s.shards.db(tenant).tables[m]
	return ok, nil
}

func (s *MonthRows) CreateTable(_ context.Context, tenant string, m month.Month) error {
	s.shards.mu.Lock()
	defer s.shards.mu.Unlock()
	d := s.shards.db(tenant)
	if _, err := d.table(m); err != nil {
		return fmt.Errorf("create table of %s: %w", m, err)
	}
	if _, ok := d.tables[m]; !ok {
		d.tables[m] = make(map[topicSeqKey]message.Message)
	}
	return nil
}

func (s *MonthRows) Load(_ context.Context, tenant string, m month.Month, recs []archive.Record) error {
	s.shards.mu.Lock()
	defer s.shards.mu.Unlock()
	table, ok := s.shards.db(tenant).tables[m]
	if !ok {
		return fmt.Errorf("load %s: table missing", m)
	}
	for _, r := range recs {
		msg, err := r.Message(m)
		if err != nil {
			return fmt.Errorf("load %s: %w", m, err)
		}
		if _, taken := table[topicSeqKey{r.Topic, r.Seq}]; !taken {
			table[topicSeqKey{r.Topic, r.Seq}] = msg
		}
	}
	return nil
}

func (s *MonthRows) DropTable(_ context.Context, tenant string, m month.Month) error {
	s.shards.mu.Lock()
	defer s.shards.mu.Unlock()
	delete(s.shards.db(tenant).tables, m)
	return nil
}

func (s *MonthRows) DeleteMirrorRow(_ context.Context, tenant, topicName string, m month.Month) error {
	s.shards.mu.Lock()
	defer s.shards.mu.Unlock()
	delete(s.shards.db(tenant).mirror[topicName], m)
	return nil
}

func (s *MonthRows) Unregister(_ context.Context, tenant string, m month.Month) error {
	s.shards.mu.Lock()
	defer s.shards.mu.Unlock()
	d := s.shards.db(tenant)
	delete(d.catalog, m)
	delete(d.tables, m)
	return nil
}
