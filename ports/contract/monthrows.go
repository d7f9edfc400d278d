package contract

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/imdhq/imd/core/domain/archive"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/ports"
)

// MonthRowsFixture is the month-row access of one fresh tenant and its shard store, which
// registers the months (a month table needs its catalog row).
type MonthRowsFixture struct {
	Tenant string
	Rows   ports.MonthRows
	Shards ports.ShardStore
}

// MonthRows checks ports.MonthRows, what archiving reads and a restore writes (seed 000 §6.6):
// tables come and go while the catalog row stays, loaded records read back as the messages they
// were, first-come by msg_id, paged by seq. fresh must return a new tenant on every call.
func MonthRows(t *testing.T, fresh func(t *testing.T) MonthRowsFixture) {
	for _, c := range []struct {
		name string
		run  func(t *testing.T, f MonthRowsFixture)
	}{
		{"tables come and go", monthTables},
		{"records load and page", monthRecords},
	} {
		t.Run(c.name, func(t *testing.T) { c.run(t, fresh(t)) })
	}
}

// rowsMonth is a month of the past, far from the live ones.
var rowsMonth = month.Month(202403)

func monthTables(t *testing.T, f MonthRowsFixture) {
	ctx := context.Background()
	exists := func() bool {
		t.Helper()
		ok, err := f.Rows.TableExists(ctx, f.Tenant, rowsMonth)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if exists() {
		t.Fatal("a fresh tenant has the table")
	}
	if err := f.Shards.EnsureTable(ctx, f.Tenant, rowsMonth); err != nil {
		t.Fatal(err)
	}
	if !exists() {
		t.Fatal("no table after EnsureTable")
	}
	for range 2 { // dropping a missing table is no error
		if err := f.Rows.DropTable(ctx, f.Tenant, rowsMonth); err != nil {
			t.Fatal(err)
		}
		if exists() {
			t.Fatal("the table is still there after DropTable")
		}
	}
	for range 2 { // the catalog row stayed; creating twice is no error
		if err := f.Rows.CreateTable(ctx, f.Tenant, rowsMonth); err != nil {
			t.Fatal(err)
		}
	}
	if !exists() {
		t.Fatal("no table after CreateTable")
	}
	if n, err := f.Rows.Count(ctx, f.Tenant, rowsMonth); err != nil || n != 0 {
		t.Fatalf("Count of a new table = %d, %v", n, err)
	}
}

func monthMessage(topic string, group, seq int64, text string) message.Message {
	return message.Message{
		Topic: topic, GroupID: group, ConversationID: 100 * group, Seq: seq, MsgID: 1000*group + seq, From: 7,
		ClientMsgID: fmt.Sprintf("c%d-%d", group, seq), Type: "text", Content: json.RawMessage(fmt.Sprintf(`{"text":%q}`, text)),
		Status: message.StatusNormal, Version: 1, CreatedAt: rowsMonth.Start().Add(time.Duration(seq) * time.Minute), Month: rowsMonth,
	}
}

func monthRecords(t *testing.T, f MonthRowsFixture) {
	ctx := context.Background()
	if err := f.Shards.EnsureTable(ctx, f.Tenant, rowsMonth); err != nil {
		t.Fatal(err)
	}
	var want []message.Message
	var recs []archive.Record
	for i, m := range []message.Message{
		monthMessage("grp_1", 1, 1, "a"), monthMessage("grp_1", 1, 2, "b"), monthMessage("grp_1", 1, 3, "c"),
		monthMessage("grp_1", 1, 4, "d"), monthMessage("grp_2", 2, 1, "e"),
	} {
		if i == 1 {
			m.Mentions, m.ReplySeq = []int64{8, 9}, 1
		}
		r, err := archive.RecordOf(m)
		if err != nil {
			t.Fatal(err)
		}
		want, recs = append(want, m), append(recs, r)
	}
	if err := f.Rows.Load(ctx, f.Tenant, rowsMonth, recs); err != nil {
		t.Fatal(err)
	}
	// Loaded again (a retried restore), with other content: the stored rows are kept.
	changed, err := archive.RecordOf(monthMessage("grp_1", 1, 2, "changed"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Rows.Load(ctx, f.Tenant, rowsMonth, []archive.Record{changed}); err != nil {
		t.Fatal(err)
	}
	page := func(topic string, after int64, limit int) []message.Message {
		t.Helper()
		rs, err := f.Rows.Rows(ctx, f.Tenant, rowsMonth, topic, after, limit)
		if err != nil {
			t.Fatal(err)
		}
		out := make([]message.Message, len(rs))
		for i, r := range rs {
			if out[i], err = r.Message(rowsMonth); err != nil {
				t.Fatal(err)
			}
		}
		return out
	}
	for _, tt := range []struct {
		topic string
		after int64
		limit int
		want  []message.Message
	}{
		{"grp_1", 0, 10, want[:4]},
		{"grp_1", 0, 2, want[:2]},
		{"grp_1", 2, 10, want[2:4]},
		{"grp_1", 4, 10, nil},
		{"grp_2", 0, 10, want[4:]},
	} {
		if got := page(tt.topic, tt.after, tt.limit); !slices.EqualFunc(got, tt.want, sameRow) {
			t.Errorf("Rows(%s, after %d, limit %d) = %+v, want %+v", tt.topic, tt.after, tt.limit, got, tt.want)
		}
	}
	if n, err := f.Rows.Count(ctx, f.Tenant, rowsMonth); err != nil || n != 5 {
		t.Fatalf("Count = %d, %v; want 5", n, err)
	}
}

// sameRow compares what a month row keeps of a message.
func sameRow(a, b message.Message) bool {
	return a.Topic == b.Topic && a.GroupID == b.GroupID && a.ConversationID == b.ConversationID && a.Seq == b.Seq &&
		a.MsgID == b.MsgID && a.From == b.From && a.ClientMsgID == b.ClientMsgID && a.Type == b.Type &&
		jsonEqual(a.Content, b.Content) && slices.Equal(a.Mentions, b.Mentions) && a.ReplySeq == b.ReplySeq &&
		a.Status == b.Status && a.Version == b.Version && a.CreatedAt.Equal(b.CreatedAt) && a.Month == b.Month
}

func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return fmt.Sprint(x) == fmt.Sprint(y)
}
