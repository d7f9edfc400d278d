package mysql

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/msgref"
	"github.com/imdhq/imd/core/domain/shard"
	"github.com/imdhq/imd/core/domain/social"
)

var archiveMonth = month.Month(203201)

// archiveTenant stores 25 messages of grp_1 (one with every optional column set) and 3 of
// grp_2 in archiveMonth.
func archiveTenant(t *testing.T) (*Cluster, string, *MonthRows) {
	t.Helper()
	ctx := context.Background()
	c, tenant := newTestCluster(t)
	shards := NewShardStore(c)
	if err := shards.EnsureTable(ctx, tenant, archiveMonth); err != nil {
		t.Fatal(err)
	}
	if err := shards.SetState(ctx, tenant, archiveMonth, shard.Prepared, shard.Writable); err != nil {
		t.Fatal(err)
	}
	store := NewMessageStore(c, MessageStoreOptions{})
	t.Cleanup(func() { store.Close() })
	at := archiveMonth.Start().Add(time.Hour)
	add := func(topic string, seq int64) {
		m := message.Message{
			Topic: topic, GroupID: 1, ConversationID: 7, Seq: seq, MsgID: int64(len(topic))*1000 + seq + int64(topic[4])*100, From: 5,
			ClientMsgID: fmt.Sprintf("c%d", seq), Type: "text", Content: json.RawMessage(fmt.Sprintf(`{"text": "第 %d 条"}`, seq)),
			Status: message.StatusNormal, Version: 1, CreatedAt: at.Add(time.Duration(seq) * time.Second), Month: archiveMonth,
		}
		if seq == 3 {
			m.Mentions, m.MentionAll, m.ReplySeq, m.EditedAt, m.Version = []int64{1, 2}, true, 2, at.Add(time.Minute), 3
		}
		if _, err := store.Append(ctx, tenant, m, "h"); err != nil {
			t.Fatal(err)
		}
	}
	for s := int64(1); s <= 25; s++ {
		add("grp_1", s)
	}
	for s := int64(1); s <= 3; s++ {
		add("grp_2", s)
	}
	// Columns no message carries, so a restore must keep them too.
	if _, err := rawDB(t, c, tenant).Exec("UPDATE im_group_messages_"+archiveMonth.String()+
		" SET head = '{\"h\":1}', root_seqid = 1, has_risk = 1, audit_status = 'review', recalled_by = 9, expires_at = ? WHERE seqid = 4 AND topic = 'grp_1'", at.AddDate(1, 0, 0)); err != nil {
		t.Fatal(err)
	}
	return c, tenant, NewMonthRows(c)
}

// TestMonthRowsRoundTripEveryColumn: rows read for the archive load back into a recreated
// table exactly, every column included.
func TestMonthRowsRoundTripEveryColumn(t *testing.T) {
	ctx := context.Background()
	_, tenant, rows := archiveTenant(t)
	var all []any
	var page []int64
	for after := int64(0); ; {
		recs, err := rows.Rows(ctx, tenant, archiveMonth, "grp_1", after, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) == 0 {
			break
		}
		page = append(page, int64(len(recs)))
		for _, r := range recs {
			all = append(all, r)
		}
		after = recs[len(recs)-1].Seq
	}
	if !slices.Equal(page, []int64{10, 10, 5}) {
		t.Fatalf("pages of %v rows", page)
	}
	if n, err := rows.Count(ctx, tenant, archiveMonth); err != nil || n != 28 {
		t.Fatalf("Count = %d, %v", n, err)
	}
	before, err := rows.Rows(ctx, tenant, archiveMonth, "grp_1", 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if r := before[3]; r.Head == nil || r.RootSeq == nil || !r.HasRisk || r.AuditStatus != "review" || r.RecalledBy == nil || r.ExpiresAt == nil {
		t.Fatalf("row 4 lost columns: %+v", r)
	}
	other, err := rows.Rows(ctx, tenant, archiveMonth, "grp_2", 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if err := rows.DropTable(ctx, tenant, archiveMonth); err != nil {
		t.Fatal(err)
	}
	if exists, err := rows.TableExists(ctx, tenant, archiveMonth); err != nil || exists {
		t.Fatalf("after DropTable: exists %v %v", exists, err)
	}
	if err := rows.DropTable(ctx, tenant, archiveMonth); err != nil {
		t.Fatalf("dropping again: %v", err)
	}
	if err := rows.CreateTable(ctx, tenant, archiveMonth); err != nil {
		t.Fatal(err)
	}
	if err := rows.Load(ctx, tenant, archiveMonth, append(before, other...)); err != nil {
		t.Fatal(err)
	}
	if err := rows.Load(ctx, tenant, archiveMonth, before[:3]); err != nil {
		t.Fatalf("loading rows that are there: %v", err)
	}
	after, err := rows.Rows(ctx, tenant, archiveMonth, "grp_1", 0, 100)
	if err != nil || !reflect.DeepEqual(after, before) {
		t.Fatalf("restored rows differ (%v):\n%+v\n%+v", err, after[3], before[3])
	}
	if n, _ := rows.Count(ctx, tenant, archiveMonth); n != 28 {
		t.Fatalf("restored table holds %d rows", n)
	}
	if err := rows.CreateTable(ctx, tenant, month.Month(203305)); err == nil {
		t.Fatal("a month outside the catalog got a table")
	}
}

func TestPurgedMonthLeavesNoMirrorOrCatalogRow(t *testing.T) {
	ctx := context.Background()
	c, tenant, rows := archiveTenant(t)
	for _, topic := range []string{"grp_1", "grp_2"} {
		if err := rows.DeleteMirrorRow(ctx, tenant, topic, archiveMonth); err != nil {
			t.Fatal(err)
		}
	}
	if err := rows.Unregister(ctx, tenant, archiveMonth); err != nil {
		t.Fatal(err)
	}
	db := rawDB(t, c, tenant)
	var mirror, catalog int
	if err := db.QueryRow("SELECT COUNT(*) FROM im_group_message_topic_shards WHERE shard_month = ?", archiveMonth.String()).Scan(&mirror); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow("SELECT COUNT(*) FROM im_group_message_shards WHERE shard_month = ?", archiveMonth.String()).Scan(&catalog); err != nil {
		t.Fatal(err)
	}
	if mirror != 0 || catalog != 0 {
		t.Fatalf("%d mirror rows and %d catalog rows left", mirror, catalog)
	}
}

func TestReferences(t *testing.T) {
	ctx := context.Background()
	c, tenant := newTestCluster(t)
	refs := NewReferences(c)
	now := time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC)
	var ids []int64
	for _, seq := range []int64{5, 9, 12} {
		f, err := refs.AddFavorite(ctx, tenant, msgref.Favorite{User: 2, Topic: "grp_1", Seq: seq, CreatedAt: now})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, f.ID)
	}
	again, err := refs.AddFavorite(ctx, tenant, msgref.Favorite{User: 2, Topic: "grp_1", Seq: 9, CreatedAt: now.Add(time.Hour)})
	if err != nil || again.ID != ids[1] || !again.CreatedAt.Equal(now) {
		t.Fatalf("saving again: %+v %v", again, err)
	}
	page, err := refs.Favorites(ctx, tenant, 2, 0, 2)
	if err != nil || len(page) != 2 || page[0].Seq != 12 || page[1].Seq != 9 {
		t.Fatalf("first page: %+v %v", page, err)
	}
	page, err = refs.Favorites(ctx, tenant, 2, page[1].ID, 2)
	if err != nil || len(page) != 1 || page[0].Seq != 5 {
		t.Fatalf("second page: %+v %v", page, err)
	}
	if removed, err := refs.RemoveFavorite(ctx, tenant, 2, "grp_1", 5); err != nil || !removed {
		t.Fatalf("remove: %v %v", removed, err)
	}
	if removed, _ := refs.RemoveFavorite(ctx, tenant, 2, "grp_1", 5); removed {
		t.Fatal("removed twice")
	}
	files := []msgref.File{
		{Topic: "grp_1", Seq: 3, MsgID: 30, From: 1, Name: "归档.pdf", Size: 10, Key: "k/3", ContentType: "application/pdf", CreatedAt: now},
		{Topic: "grp_1", Seq: 7, MsgID: 70, From: 1, Name: "b", Key: "k/7", CreatedAt: now},
		{Topic: "grp_1", Seq: 15, MsgID: 150, From: 1, Name: "c", Key: "k/15", CreatedAt: now},
	}
	if err := refs.AddFiles(ctx, tenant, files); err != nil {
		t.Fatal(err)
	}
	if err := refs.AddFiles(ctx, tenant, files[:1]); err != nil {
		t.Fatalf("adding again: %v", err)
	}
	got, err := refs.Files(ctx, tenant, "grp_1", 15, 10)
	if err != nil || !reflect.DeepEqual(got, []msgref.File{files[1], files[0]}) {
		t.Fatalf("Files before 15: %+v %v", got, err)
	}
	if _, err := NewReports(c).AddReport(ctx, tenant, social.Report{ID: 1, Reporter: 2, Topic: "grp_1", Seq: 8, Status: social.ReportOpen, CreatedAt: now, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	seqs, err := refs.Referenced(ctx, tenant, "grp_1", 4, 12)
	if err != nil || !slices.Equal(seqs, []int64{7, 8, 9, 12}) {
		t.Fatalf("Referenced 4-12 = %v %v", seqs, err)
	}
	if err := refs.RemoveFileRange(ctx, tenant, "grp_1", 1, 7); err != nil {
		t.Fatal(err)
	}
	if got, _ := refs.Files(ctx, tenant, "grp_1", 0, 10); len(got) != 1 || got[0].Seq != 15 {
		t.Fatalf("after RemoveFileRange: %+v", got)
	}
	if err := refs.RemoveFile(ctx, tenant, "grp_1", 15); err != nil {
		t.Fatal(err)
	}
	if got, _ := refs.Files(ctx, tenant, "grp_1", 0, 10); len(got) != 0 {
		t.Fatalf("after RemoveFile: %+v", got)
	}
}
