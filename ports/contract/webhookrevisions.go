package contract

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/imdhq/imd/core/domain/webhook"
	"github.com/imdhq/imd/ports"
)

// WebhookRevisionsFactory returns the revision reader of an empty tenant and record, which
// writes an edit or a recall as its change's transaction does and returns its id.
type WebhookRevisionsFactory func(t *testing.T) (revs ports.WebhookRevisions, record func(t *testing.T, r webhook.Revision) int64, tenant string)

// WebhookRevisions runs the contract of the edits and recalls webhooks read (docs/DESIGN.md
// issue-32 part 2 "Edits and recalls"): read by id within a window of their time, a page at a
// time, and the first one made in a window found by its time, whatever its id.
func WebhookRevisions(t *testing.T, newStores WebhookRevisionsFactory) {
	revs, record, tenant := newStores(t)
	ctx := context.Background()
	from := time.Date(2030, 2, 1, 8, 0, 0, 0, time.UTC)
	until := from.Add(time.Hour)
	// Ids are not in time order: a change's time is taken before its transaction commits.
	var made []stamped
	var want []webhook.Revision
	for i, sec := range []int{3, 1, 2, 5, 4} {
		r := webhook.Revision{Topic: "grp_1", Seq: int64(i + 1), MsgID: int64(1000 + i), Version: 2, Editor: 7,
			Recall: i%2 == 1, At: from.Add(time.Duration(sec) * time.Second)}
		if !r.Recall {
			r.Content = json.RawMessage(`{"text":"fixed"}`)
		}
		r.ID = record(t, r)
		if len(made) > 0 && r.ID <= made[len(made)-1].id {
			t.Fatalf("revision %d recorded with id %d, not above %d", i, r.ID, made[len(made)-1].id)
		}
		made, want = append(made, stamped{r.ID, r.At}), append(want, r)
	}
	got, err := revs.RevisionsAfter(ctx, tenant, 0, from, until, 100)
	if err != nil || len(got) != len(want) {
		t.Fatalf("RevisionsAfter(0) = %+v, %v; want %d revisions", got, err, len(want))
	}
	for i, r := range got {
		w := want[i]
		if r.ID != w.ID || r.Topic != w.Topic || r.Seq != w.Seq || r.MsgID != w.MsgID || r.Version != w.Version || r.Editor != w.Editor ||
			r.Recall != w.Recall || !r.At.Equal(w.At) || !sameJSON(r.Content, w.Content) {
			t.Fatalf("revision %d = %+v, want %+v", i, r, w)
		}
	}
	if page, err := revs.RevisionsAfter(ctx, tenant, made[1].id, from, until, 2); err != nil || len(page) != 2 || page[0].ID != made[2].id || page[1].ID != made[3].id {
		t.Fatalf("RevisionsAfter(%d, limit 2) = %+v, %v; want revisions 3 and 4", made[1].id, page, err)
	}
	if page, err := revs.RevisionsAfter(ctx, tenant, 0, from, earliest(made), 100); err != nil || len(page) != 0 {
		t.Fatalf("RevisionsAfter until the earliest revision = %+v, %v; want none", page, err)
	}
	firstInWindows(t, "FirstRevision", made, from, until, func(from, until time.Time) (int64, bool, error) {
		return revs.FirstRevision(ctx, tenant, from, until)
	})
}
