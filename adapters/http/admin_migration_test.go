package http

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/memory"
	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/loop/migration"
)

const migrationPath = "/admin/v1/tenants/default/migration"

func TestMigrationRoutesWithoutAService(t *testing.T) {
	h := newHarness(t, Config{AdminKey: adminKey}, Deps{})
	for _, r := range []struct{ method, path string }{{"GET", "/status"}, {"GET", "/plan"}, {"POST", "/start"}, {"POST", "/finish"}} {
		wantError(t, h.do(r.method, migrationPath+r.path, ""), http.StatusServiceUnavailable, apperr.Busy)
	}
}

func TestMigrationRoutes(t *testing.T) {
	shards := memory.NewShardStore()
	jobs := memory.NewLegacy(shards, time.Now)
	clock := memory.NewClock(time.Date(2031, 3, 10, 0, 0, 0, 0, time.UTC))
	months := memory.NewMonthState(clock.Now)
	svc := migration.New(migration.Config{}, migration.Deps{
		Store: jobs, Shards: shards, Months: months, Seq: memory.NewSeqAllocator(months, clock.Now),
		Metrics: memory.NewMetrics(), IDs: memory.NewIDs(clock), Clock: clock,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), DualRead: true,
	})
	h := newHarness(t, Config{AdminKey: adminKey}, Deps{Migration: svc})

	wantError(t, h.do("POST", migrationPath+"/start", ""), http.StatusNotFound, apperr.NotFound)
	wantError(t, h.do("POST", migrationPath+"/pause", ""), http.StatusConflict, apperr.Conflict)
	wantError(t, h.do("POST", migrationPath+"/start", `{"rerun":"yes"}`), http.StatusBadRequest, apperr.InvalidArgument)

	jan := month.Month(203101)
	jobs.Load("default", []message.Message{
		{Topic: "grp_1", Seq: 1, MsgID: 11, From: 7, Type: "text", Status: message.StatusNormal, Version: 1, CreatedAt: jan.Start().Add(time.Hour)},
		{Topic: "grp_1", Seq: 2, MsgID: 12, From: 7, Type: "text", Status: message.StatusNormal, Version: 1, CreatedAt: jan.Next().Start().Add(time.Hour)},
	})
	rec := h.do("GET", migrationPath+"/plan", "")
	var plan migrationPlanJSON
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &plan) != nil || !plan.Present || plan.Rows != 2 || len(plan.Months) != 2 || plan.Months[0].Month != "203101" {
		t.Fatalf("plan: %d %s", rec.Code, rec.Body)
	}
	rec = h.do("POST", migrationPath+"/start", "")
	var job migrationJobJSON
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &job) != nil || job.Phase != "copying" || job.Rows != 2 || job.CutoverAt == 0 {
		t.Fatalf("start: %d %s", rec.Code, rec.Body)
	}
	if rec = h.do("POST", migrationPath+"/pause", ""); rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &job) != nil || job.Phase != "paused" {
		t.Fatalf("pause: %d %s", rec.Code, rec.Body)
	}
	wantError(t, h.do("POST", migrationPath+"/finish", ""), http.StatusConflict, apperr.Conflict)
	rec = h.do("GET", migrationPath+"/status", "")
	var st migrationStatusJSON
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &st) != nil || st.Job.Phase != "paused" || st.Job.Remaining != 2 ||
		len(st.Months) != 2 || st.Months[1].Month != "203102" || st.Months[1].Rows != 1 {
		t.Fatalf("status: %d %s", rec.Code, rec.Body)
	}
}
