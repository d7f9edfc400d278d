package admin_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"imd/adapters/memory"
	"imd/core/admin"
	"imd/core/apperr"
	"imd/core/message"
	"imd/core/month"
	"imd/core/shard"
	"imd/core/social"
	"imd/ports"
)

func TestStatsFromCatalogAndMirror(t *testing.T) {
	ctx := context.Background()
	const tenant = "acme"
	shards, dir := memory.NewShardStore(), memory.NewDirectory()
	store := memory.NewMessageStore(shards)
	jan, feb, mar := month.Month(203001), month.Month(203002), month.Month(203003)
	for _, m := range []month.Month{jan, feb, mar} {
		if err := shards.EnsureTable(ctx, tenant, m); err != nil {
			t.Fatal(err)
		}
		if err := shards.SetState(ctx, tenant, m, shard.Prepared, shard.Writable); err != nil {
			t.Fatal(err)
		}
	}
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
	svc := admin.New(admin.Deps{Shards: shards, Summaries: memory.NewSummaries(shards, dir)})

	st, err := svc.Stats(ctx, tenant, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if st.Totals.Users != 2 || st.Totals.Groups != 0 || len(st.Months) != 3 {
		t.Fatalf("stats = %+v", st)
	}
	j := st.Months[0]
	if j.Month != jan || j.Messages != 3 || j.Topics != 2 || j.GroupTopics != 1 || j.P2PTopics != 1 || j.State != shard.Writable {
		t.Fatalf("January = %+v", j)
	}
	if m := st.Months[2]; m.Month != mar || m.Messages != 0 || m.Topics != 0 || !m.FirstAt.IsZero() {
		t.Fatalf("an empty month = %+v", m)
	}

	tests := []struct {
		name     string
		from, to month.Month
		months   int
		want     apperr.Code
	}{
		{"from February", feb, 0, 2, apperr.OK},
		{"until January", 0, jan, 1, apperr.OK},
		{"one month", feb, feb, 1, apperr.OK},
		{"reversed", mar, jan, 0, apperr.InvalidArgument},
		{"invalid month", month.Month(203013), 0, 0, apperr.InvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, err := svc.Stats(ctx, tenant, tt.from, tt.to)
			if apperr.CodeOf(err) != tt.want || len(st.Months) != tt.months {
				t.Fatalf("Stats = %d months, %v; want %d, code %d", len(st.Months), err, tt.months, tt.want)
			}
		})
	}
}
