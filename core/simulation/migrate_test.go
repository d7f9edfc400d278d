package simulation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/imdhq/imd/core/domain/legacy"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/shard"
	"github.com/imdhq/imd/core/domain/social"
	"github.com/imdhq/imd/core/usecase/history"
	"github.com/imdhq/imd/ports"
)

// The legacy table holds one group's history from before imd: legacyRows messages of a group
// (owner 2, member 6) that nobody sends to in the run, so its seqs are the legacy ones only.
const (
	legacyGroup = 12
	legacyRows  = 30
)

// seedLegacy creates the legacy group and loads its messages into the legacy table: the first
// third created in August, the rest in September, seqs 1..legacyRows in created_at order.
func (w *world) seedLegacy(ctx context.Context) error {
	c, err := w.dir.CreateGroup(ctx, tenant, social.Group{ID: legacyGroup, Owner: 2}, 5000+legacyGroup, []int64{6}, 0)
	if err != nil {
		return err
	}
	w.legacyTopic = c.Topic
	aug, sep := month.Month(202608).Start(), month.Month(202609).Start()
	for i := range legacyRows {
		at := sep.Add(time.Duration(i) * 7 * time.Hour)
		if i < legacyRows/3 {
			at = aug.Add(time.Duration(i) * 24 * time.Hour)
		}
		content, _ := json.Marshal(map[string]string{"text": fmt.Sprintf("legacy %d", i+1)})
		w.legacyMsgs = append(w.legacyMsgs, message.Message{
			Topic: c.Topic, Seq: int64(i + 1), MsgID: 1_000_000 + int64(i), From: []int64{2, 6}[i%2],
			ClientMsgID: fmt.Sprintf("l%d", i+1), Type: "text", Content: content, Status: message.StatusNormal, Version: 1,
			CreatedAt: at, Month: month.Of(at),
		})
	}
	w.legacy.Load(tenant, w.legacyMsgs)
	return nil
}

// migrate runs one operator command of the migration, one pass of its job, or a member's sync
// of the legacy group through the node.
func (w *world) migrate(n *node, s step) {
	ctx := context.Background()
	var err error
	var what string
	switch op := s.a % 16; {
	case op == 0:
		what = "start"
		_, err = n.migration.Start(ctx, tenant, s.b%4 == 0)
	case op == 1:
		what = "pause"
		_, err = n.migration.Pause(ctx, tenant)
	case op <= 3:
		what = "resume"
		_, err = n.migration.Resume(ctx, tenant)
	case op <= 9:
		what = "pass"
		_, err = n.migration.Step(ctx, tenant)
	case op == 10:
		what = "verify"
		_, err = n.migration.Verify(ctx, tenant)
	case op <= 12:
		what = "finish"
		_, err = n.migration.Finish(ctx, tenant)
	default:
		_ = w.syncLegacy(n, []int64{2, 6}[s.b%2])
		return
	}
	job, _ := w.legacy.Job(ctx, tenant)
	w.trace("migration %s: %v; job %s, copied %d", what, err, job.Phase, job.Copied)
}

// syncLegacy has a member of the legacy group sync it from the start through node n: every
// legacy message comes back once, at its seq with its msg_id, whatever the migration's phase.
func (w *world) syncLegacy(n *node, user int64) error {
	var got []message.Message
	for since := int64(0); ; {
		res, err := n.history.Sync(context.Background(), history.SyncRequest{Tenant: tenant, User: user, Topic: w.legacyTopic, Since: since, Limit: history.MaxLimit})
		if err != nil {
			w.trace("sync of the legacy group by user %d: %v", user, err)
			return err
		}
		got = append(got, res.Messages...)
		if !res.HasMore || len(res.Messages) == 0 {
			break
		}
		since = res.LastSeq
	}
	if len(got) != len(w.legacyMsgs) {
		w.model.violate("sync of the legacy group %s by user %d returned %d messages, not %d", w.legacyTopic, user, len(got), len(w.legacyMsgs))
		return nil
	}
	for i, m := range got {
		if want := w.legacyMsgs[i]; m.Seq != want.Seq || m.MsgID != want.MsgID {
			w.model.violate("sync of the legacy group %s by user %d: message %d is seq %d msg_id %d, not seq %d msg_id %d",
				w.legacyTopic, user, i, m.Seq, m.MsgID, want.Seq, want.MsgID)
			return nil
		}
	}
	w.trace("sync of the legacy group by user %d: %d messages", user, len(got))
	return nil
}

// checkLegacy: the month tables hold each legacy row at most once, at its seq, month and
// msg_id, and never lose one they held; dual read shows every legacy row exactly once; a
// finished migration has copied them all.
func (w *world) checkLegacy() {
	ctx := context.Background()
	months := map[month.Month]bool{}
	for _, m := range w.legacyMsgs {
		months[m.Month] = true
	}
	if infos, err := w.shards.Catalog(ctx, tenant); err == nil {
		for _, in := range infos {
			months[in.Month] = true
		}
	}
	copied := map[int64]bool{}
	seen := map[int64]int{}
	for _, m := range slices.Sorted(func(yield func(month.Month) bool) {
		for m := range months {
			if !yield(m) {
				return
			}
		}
	}) {
		q := message.PageQuery{Topic: w.legacyTopic, Limit: 500, IncludeDeleted: true}
		for name, store := range map[string]ports.MessageStore{"month table": w.store, "dual read": w.dualRead} {
			rows, err := store.Page(ctx, tenant, m, q)
			if errors.Is(err, shard.ErrMonthMissing) {
				continue
			}
			if err != nil {
				w.model.violate("%s of the legacy group in %s unreadable: %v", name, m, err)
				continue
			}
			for _, r := range rows {
				if r.Seq < 1 || r.Seq > legacyRows || r.MsgID != w.legacyMsgs[r.Seq-1].MsgID || m != w.legacyMsgs[r.Seq-1].Month {
					w.model.violate("%s of %s in %s holds seq %d msg_id %d, no legacy row", name, w.legacyTopic, m, r.Seq, r.MsgID)
					continue
				}
				if name == "dual read" {
					seen[r.Seq]++
					continue
				}
				if copied[r.Seq] {
					w.model.violate("legacy row %s seq %d copied twice", w.legacyTopic, r.Seq)
				}
				copied[r.Seq] = true
			}
		}
	}
	for _, m := range w.legacyMsgs {
		if seen[m.Seq] != 1 {
			w.model.violate("legacy message %s seq %d read %d times through dual read", w.legacyTopic, m.Seq, seen[m.Seq])
		}
		if w.legacyCopied[m.Seq] && !copied[m.Seq] {
			w.model.violate("legacy row %s seq %d was copied, now it is gone from its month table", w.legacyTopic, m.Seq)
		}
	}
	w.legacyCopied = copied
	job, err := w.legacy.Job(ctx, tenant)
	switch {
	case err != nil:
		w.model.violate("migration job unreadable: %v", err)
	case job.Phase == legacy.PhaseFinished && len(copied) != legacyRows:
		w.model.violate("the migration finished with %d of %d legacy rows in the month tables", len(copied), legacyRows)
	case job.Phase == legacy.PhaseFailed:
		// Nothing writes the legacy table or its seqs in a run: verification has nothing to find.
		w.model.violate("the migration failed: %s", job.Error)
	case job.Failed > 0:
		w.model.violate("%d legacy rows could not be copied: their seq or client_msg_id is taken", job.Failed)
	}
}

// gatedMigrations gates the job's calls to MySQL: a crash may come between any two of a pass.
type gatedMigrations struct {
	ports.MigrationStore
	g *gate
}

func (s gatedMigrations) Job(ctx context.Context, tenant string) (legacy.Job, error) {
	if err := s.g.pass(mysqlBackend, "Migrations.Job"); err != nil {
		return legacy.Job{}, err
	}
	return s.MigrationStore.Job(ctx, tenant)
}

func (s gatedMigrations) Cutover(ctx context.Context, tenant string) (legacy.Job, error) {
	if err := s.g.pass(mysqlBackend, "Migrations.Cutover"); err != nil {
		return legacy.Job{}, err
	}
	return s.MigrationStore.Cutover(ctx, tenant)
}

func (s gatedMigrations) Progress(ctx context.Context, tenant string) (legacy.Progress, error) {
	if err := s.g.pass(mysqlBackend, "Migrations.Progress"); err != nil {
		return legacy.Progress{}, err
	}
	return s.MigrationStore.Progress(ctx, tenant)
}

func (s gatedMigrations) SetPhase(ctx context.Context, tenant string, c legacy.PhaseChange) (legacy.Job, error) {
	if err := s.g.pass(mysqlBackend, "Migrations.SetPhase"); err != nil {
		return legacy.Job{}, err
	}
	return s.MigrationStore.SetPhase(ctx, tenant, c)
}

func (s gatedMigrations) Rerun(ctx context.Context, tenant string, from []legacy.Phase) (legacy.Job, error) {
	if err := s.g.pass(mysqlBackend, "Migrations.Rerun"); err != nil {
		return legacy.Job{}, err
	}
	return s.MigrationStore.Rerun(ctx, tenant, from)
}

func (s gatedMigrations) Reverify(ctx context.Context, tenant string, from []legacy.Phase) (legacy.Job, error) {
	if err := s.g.pass(mysqlBackend, "Migrations.Reverify"); err != nil {
		return legacy.Job{}, err
	}
	return s.MigrationStore.Reverify(ctx, tenant, from)
}

func (s gatedMigrations) MarkPrepared(ctx context.Context, tenant string) error {
	if err := s.g.pass(mysqlBackend, "Migrations.MarkPrepared"); err != nil {
		return err
	}
	return s.MigrationStore.MarkPrepared(ctx, tenant)
}

func (s gatedMigrations) PrepareTable(ctx context.Context, tenant string) error {
	if err := s.g.pass(mysqlBackend, "Migrations.PrepareTable"); err != nil {
		return err
	}
	return s.MigrationStore.PrepareTable(ctx, tenant)
}

func (s gatedMigrations) Watermarks(ctx context.Context, tenant, after string, limit int) ([]legacy.TopicSeq, error) {
	if err := s.g.pass(mysqlBackend, "Migrations.Watermarks"); err != nil {
		return nil, err
	}
	return s.MigrationStore.Watermarks(ctx, tenant, after, limit)
}

func (s gatedMigrations) CopyBatch(ctx context.Context, tenant string, limit int) (legacy.Batch, error) {
	if err := s.g.pass(mysqlBackend, "Migrations.CopyBatch"); err != nil {
		return legacy.Batch{}, err
	}
	return s.MigrationStore.CopyBatch(ctx, tenant, limit)
}

func (s gatedMigrations) MonthTopics(ctx context.Context, tenant string, m month.Month) ([]legacy.TopicMonth, error) {
	if err := s.g.pass(mysqlBackend, "Migrations.MonthTopics"); err != nil {
		return nil, err
	}
	return s.MigrationStore.MonthTopics(ctx, tenant, m)
}

func (s gatedMigrations) RecordVerification(ctx context.Context, tenant string, m month.Month, state legacy.VerifyState, results []legacy.TopicResult) error {
	if err := s.g.pass(mysqlBackend, "Migrations.RecordVerification"); err != nil {
		return err
	}
	return s.MigrationStore.RecordVerification(ctx, tenant, m, state, results)
}

func (s gatedMigrations) Finish(ctx context.Context, tenant string) error {
	if err := s.g.pass(mysqlBackend, "Migrations.Finish"); err != nil {
		return err
	}
	return s.MigrationStore.Finish(ctx, tenant)
}
