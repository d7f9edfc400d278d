package reports_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/memory"
	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/social"
	"github.com/imdhq/imd/core/loop/shardmanager"
	"github.com/imdhq/imd/core/store/membership"
	"github.com/imdhq/imd/core/usecase/conversation"
	"github.com/imdhq/imd/core/usecase/history"
	"github.com/imdhq/imd/core/usecase/reports"
	"github.com/imdhq/imd/core/usecase/send"
)

const tenant = "acme"

// newFixture has group 10 of users 1 and 2 holding one message (seq 1) from 1; user 3 is an
// outsider.
func newFixture(t *testing.T) *reports.Service {
	t.Helper()
	ctx := context.Background()
	clock := memory.NewClock(time.Date(2030, 2, 3, 4, 5, 6, 0, time.UTC))
	log := slog.New(slog.DiscardHandler)
	shards := memory.NewShardStore()
	store := memory.NewMessageStore(shards)
	months := memory.NewMonthState(clock.Now)
	metrics := memory.NewMetrics()
	manager := shardmanager.New(shardmanager.Config{SealingDays: 7}, shardmanager.Deps{Store: shards, Months: months, Metrics: metrics, Log: log})
	if err := manager.Ensure(ctx, tenant); err != nil {
		t.Fatal(err)
	}
	dir := memory.NewDirectory()
	for id := int64(1); id <= 3; id++ {
		if err := dir.CreateUser(ctx, tenant, social.User{ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := dir.CreateGroup(ctx, tenant, social.Group{ID: 10, Owner: 1}, 1000, []int64{2}, 0); err != nil {
		t.Fatal(err)
	}
	ids := memory.NewIDs(clock)
	routes := memory.NewRouteCache()
	resolver := conversation.NewResolver(dir, ids, membership.New(dir, clock, time.Minute), conversation.WithClock(clock))
	seqs := memory.NewSeqAllocator(months, clock.Now)
	sender := send.New(send.Config{MsgIDWindow: time.Minute}, send.Deps{
		Seq: seqs, Store: store, FollowUp: &memory.CommitFollowUp{Routes: routes, Queue: memory.NewDeliverQueue(clock.Now), Seqs: seqs},
		IDs: ids, Clock: clock, Metrics: metrics, Resolver: resolver, Log: log, Months: manager,
	})
	if _, err := sender.Send(ctx, send.Request{
		Tenant: tenant, From: 1, Address: conversation.Address{Topic: "grp_10"},
		Draft: message.Draft{ClientMsgID: "m1", Type: "text", Content: json.RawMessage(`{"text":"buy now"}`)},
	}); err != nil {
		t.Fatal(err)
	}
	hist := history.New(history.Deps{Store: store, Routes: routes, Months: months, Metrics: metrics, Resolver: resolver, Log: log})
	return reports.New(reports.Deps{Store: memory.NewReports(), History: hist, IDs: ids, Clock: clock})
}

func TestFile(t *testing.T) {
	tests := []struct {
		name     string
		reporter int64
		topic    string
		seq      int64
		reason   string
		want     apperr.Code
	}{
		{"member reports", 2, "grp_10", 1, "spam", apperr.OK},
		{"outsider cannot report", 3, "grp_10", 1, "spam", apperr.Forbidden},
		{"no such message", 2, "grp_10", 9, "spam", apperr.NotFound},
		{"reason too long", 2, "grp_10", 1, string(make([]byte, social.MaxReportReason+1)), apperr.InvalidArgument},
		{"bad topic", 2, "grp_x", 1, "", apperr.InvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc := newFixture(t)
			r, err := svc.File(context.Background(), tenant, tt.reporter, tt.topic, tt.seq, tt.reason)
			if got := apperr.CodeOf(err); got != tt.want {
				t.Fatalf("File = %+v, %v; want code %d", r, err, tt.want)
			}
		})
	}
}

func TestReviewWithEvidence(t *testing.T) {
	svc := newFixture(t)
	ctx := context.Background()
	first, err := svc.File(ctx, tenant, 2, "grp_10", 1, "spam")
	if err != nil {
		t.Fatal(err)
	}
	again, err := svc.File(ctx, tenant, 2, "grp_10", 1, "still spam")
	if err != nil || again.ID != first.ID {
		t.Fatalf("a repeated report = %+v, %v; want the first (%d)", again, err, first.ID)
	}
	list, err := svc.List(ctx, tenant, social.ReportQuery{Status: social.ReportOpen})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].Evidence == nil || string(list[0].Evidence.Content) != `{"text":"buy now"}` || list[0].Evidence.From != 1 {
		t.Fatalf("reports = %+v", list)
	}
	if err := svc.SetStatus(ctx, tenant, first.ID, social.ReportResolved); err != nil {
		t.Fatal(err)
	}
	if list, _ := svc.List(ctx, tenant, social.ReportQuery{Status: social.ReportOpen}); len(list) != 0 {
		t.Fatalf("open reports after resolving = %+v", list)
	}
	for _, c := range []struct {
		err  error
		want apperr.Code
	}{
		{svc.SetStatus(ctx, tenant, first.ID+1, social.ReportResolved), apperr.NotFound},
		{svc.SetStatus(ctx, tenant, first.ID, "closed"), apperr.InvalidArgument},
	} {
		if apperr.CodeOf(c.err) != c.want {
			t.Errorf("err = %v, want code %d", c.err, c.want)
		}
	}
	if _, err := svc.List(ctx, tenant, social.ReportQuery{Status: "closed"}); apperr.CodeOf(err) != apperr.InvalidArgument {
		t.Errorf("List with an unknown status: %v", err)
	}
}
