package admin_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/memory"
	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/shard"
	"github.com/imdhq/imd/core/domain/social"
	"github.com/imdhq/imd/core/domain/stats"
	"github.com/imdhq/imd/core/usecase/admin"
	"github.com/imdhq/imd/ports"
)

func TestStatsFromCatalogAndMirror(t *testing.T) {
	ctx := context.Background()
	const tenant = "acme"
	jan, feb, mar := month.Month(203001), month.Month(203002), month.Month(203003)
	shards, dir, store := writableMonths(t, tenant, jan, feb, mar)
	var lastID int64
	appendMsg := func(topic string, seq int64, m month.Month) {
		t.Helper()
		lastID++
		msg := message.Message{
			Topic: topic, Seq: seq, MsgID: lastID, From: 1, ClientMsgID: fmt.Sprint("c", lastID),
			Type: "text", Content: json.RawMessage(`{"text":"x"}`), Status: message.StatusNormal, Version: 1,
			CreatedAt: m.Start().Add(time.Duration(seq) * time.Hour), Month: m,
		}
		if res, err := store.Append(ctx, tenant, msg, "h"); err != nil || res.Outcome != ports.Stored {
			t.Fatalf("Append: %+v, %v", res, err)
		}
	}
	appendMsg("grp_1", 1, jan)
	appendMsg("grp_1", 2, jan)
	appendMsg("p2p_1_2", 1, jan)
	appendMsg("grp_1", 3, feb)
	for id := int64(1); id <= 2; id++ {
		if err := dir.CreateUser(ctx, tenant, social.User{ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	sums := memory.NewSummaries(shards, dir)
	day := func(m month.Month, d int) time.Time { return m.Start().AddDate(0, 0, d-1) }
	for _, d := range []stats.Day{
		{Day: day(jan, 2), Messages: 3, GroupMessages: 2, P2PMessages: 1},
		{Day: day(feb, 1), Messages: 1, GroupMessages: 1},
		{Day: day(feb, 28), Messages: 5, P2PMessages: 5},
	} {
		if err := sums.AddDay(ctx, tenant, d); err != nil {
			t.Fatal(err)
		}
	}
	svc := admin.New(admin.Deps{Shards: shards, Summaries: sums})

	st, err := svc.Stats(ctx, tenant, time.Time{}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if st.Totals.Users != 2 || st.Totals.Groups != 0 || len(st.Months) != 3 || len(st.Days) != 3 {
		t.Fatalf("stats = %+v", st)
	}
	if d := st.Days[0]; !d.Day.Equal(day(jan, 2)) || d.Messages != 3 || d.GroupMessages != 2 || d.P2PMessages != 1 {
		t.Fatalf("January 2nd = %+v", d)
	}
	j := st.Months[0]
	if j.Month != jan || j.Messages != 3 || j.Topics != 2 || j.GroupTopics != 1 || j.P2PTopics != 1 || j.State != shard.Writable {
		t.Fatalf("January = %+v", j)
	}
	if m := st.Months[2]; m.Month != mar || m.Messages != 0 || m.Topics != 0 || !m.FirstAt.IsZero() {
		t.Fatalf("an empty month = %+v", m)
	}

	tests := []struct {
		name         string
		from, to     time.Time
		months, days int
		want         apperr.Code
	}{
		{"from February", feb.Start(), time.Time{}, 2, 2, apperr.OK},
		{"until January", time.Time{}, day(jan, 31), 1, 1, apperr.OK},
		{"one month", feb.Start(), day(feb, 28), 1, 2, apperr.OK},
		{"one day, at any time of it", day(feb, 28).Add(23 * time.Hour), day(feb, 28).Add(time.Hour), 1, 1, apperr.OK},
		{"days without messages", day(jan, 3), day(jan, 31), 1, 0, apperr.OK},
		{"reversed", mar.Start(), day(jan, 1), 0, 0, apperr.InvalidArgument},
		{"a year out of bounds", time.Date(1999, 12, 31, 0, 0, 0, 0, time.UTC), time.Time{}, 0, 0, apperr.InvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, err := svc.Stats(ctx, tenant, tt.from, tt.to)
			if apperr.CodeOf(err) != tt.want || len(st.Months) != tt.months || len(st.Days) != tt.days {
				t.Fatalf("Stats = %d months, %d days, %v; want %d, %d, code %d", len(st.Months), len(st.Days), err, tt.months, tt.days, tt.want)
			}
		})
	}
}

func TestStatsDaysAreBounded(t *testing.T) {
	ctx := context.Background()
	const tenant = "acme"
	shards := memory.NewShardStore()
	sums := memory.NewSummaries(shards, memory.NewDirectory())
	first := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range admin.MaxStatsDays + 10 {
		if err := sums.AddDay(ctx, tenant, stats.Day{Day: first.AddDate(0, 0, i), Messages: 1, GroupMessages: 1}); err != nil {
			t.Fatal(err)
		}
	}
	st, err := admin.New(admin.Deps{Shards: shards, Summaries: sums}).Stats(ctx, tenant, time.Time{}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(st.Days); n != admin.MaxStatsDays || !st.Days[n-1].Day.Equal(first.AddDate(0, 0, admin.MaxStatsDays+9)) {
		t.Fatalf("%d days ending %v; want the newest %d", n, st.Days[n-1].Day, admin.MaxStatsDays)
	}
}

// After the month was advanced early, a later table holds messages of earlier days: a range
// of those days lists it beside the tables its calendar months name.
func TestStatsListAMonthWrittenAheadOfTheCalendar(t *testing.T) {
	ctx := context.Background()
	const tenant = "acme"
	jan, feb, mar := month.Month(203001), month.Month(203002), month.Month(203003)
	shards, dir, store := writableMonths(t, tenant, jan, feb, mar)
	// Sent on January 20th into March's table.
	msg := message.Message{
		Topic: "grp_1", Seq: 1, MsgID: 1, From: 1, ClientMsgID: "c1", Type: "text", Content: json.RawMessage(`{"text":"x"}`),
		Status: message.StatusNormal, Version: 1, CreatedAt: jan.Start().AddDate(0, 0, 19), Month: mar,
	}
	if res, err := store.Append(ctx, tenant, msg, "h"); err != nil || res.Outcome != ports.Stored {
		t.Fatalf("Append: %+v, %v", res, err)
	}
	svc := admin.New(admin.Deps{Shards: shards, Summaries: memory.NewSummaries(shards, dir)})
	tests := []struct {
		name     string
		from, to time.Time
		want     []month.Month
	}{
		{"January", jan.Start(), jan.End().AddDate(0, 0, -1), []month.Month{jan, mar}},
		{"the day itself", msg.CreatedAt, msg.CreatedAt, []month.Month{jan, mar}},
		{"the day before", msg.CreatedAt.AddDate(0, 0, -1), msg.CreatedAt.AddDate(0, 0, -1), []month.Month{jan}},
		{"February", feb.Start(), feb.End().AddDate(0, 0, -1), []month.Month{feb}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, err := svc.Stats(ctx, tenant, tt.from, tt.to)
			if err != nil {
				t.Fatal(err)
			}
			var got []month.Month
			for _, m := range st.Months {
				got = append(got, m.Month)
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Fatalf("months %v, want %v", got, tt.want)
			}
		})
	}
}

// writableMonths is a tenant's shard catalog with the months' tables writable, an empty
// directory and a message store over the catalog.
func writableMonths(t *testing.T, tenant string, months ...month.Month) (*memory.ShardStore, *memory.Directory, *memory.MessageStore) {
	t.Helper()
	shards, dir := memory.NewShardStore(), memory.NewDirectory()
	for _, m := range months {
		if err := shards.EnsureTable(t.Context(), tenant, m); err != nil {
			t.Fatal(err)
		}
		if err := shards.SetState(t.Context(), tenant, m, shard.Prepared, shard.Writable); err != nil {
			t.Fatal(err)
		}
	}
	return shards, dir, memory.NewMessageStore(shards)
}
