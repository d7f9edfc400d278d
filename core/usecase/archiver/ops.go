package archiver

import (
	"context"
	"errors"
	"fmt"

	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/archive"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/shard"
	"github.com/imdhq/imd/core/kit/jobs"
	"github.com/imdhq/imd/core/store/archivereader"
)

// Manifest returns an archived month's manifest.
func (s *Service) Manifest(ctx context.Context, tenant string, m month.Month) (*archive.Manifest, error) {
	if !m.Valid() {
		return nil, apperr.New(apperr.InvalidArgument, "invalid month")
	}
	man, err := s.d.Reader.Manifest(ctx, tenant, m)
	if errors.Is(err, archivereader.ErrNoArchive) {
		return nil, apperr.New(apperr.NotFound, "month has no archive")
	}
	if err != nil {
		return nil, apperr.Wrap(apperr.Busy, "archive storage unavailable", err)
	}
	return man, nil
}

// archived loads the manifest of a month that must be archived.
func (s *Service) archived(ctx context.Context, tenant string, m month.Month) (*archive.Manifest, error) {
	state, err := s.state(ctx, tenant, m)
	if err != nil {
		return nil, err
	}
	if state != shard.Archived {
		return nil, apperr.New(apperr.Conflict, fmt.Sprintf("month is %s, not archived", state))
	}
	s.d.Reader.Forget(tenant, m) // read what the store holds now, not a cached copy
	man, err := s.Manifest(ctx, tenant, m)
	if apperr.CodeOf(err) == apperr.NotFound {
		return nil, apperr.New(apperr.Conflict, "month is archived but has no archive files; archive it again")
	}
	return man, err
}

// Drop removes an archived month's table after verifying, row by row, that the archive holds
// exactly what the table holds: a change made to the table after the export (an edit that
// raced it) stops the drop, so no row is lost. Dropping a dropped table does nothing.
func (s *Service) Drop(ctx context.Context, tenant string, m month.Month, rep jobs.Reporter) error {
	err := s.exclusively(ctx, tenant, m, func(ctx context.Context) error {
		if err := s.outsideWindow(ctx, m); err != nil {
			return err
		}
		man, err := s.archived(ctx, tenant, m)
		if err != nil {
			return err
		}
		exists, err := s.d.Rows.TableExists(ctx, tenant, m)
		if err != nil {
			return apperr.Wrap(apperr.Busy, "month table unavailable", err)
		}
		if !exists {
			return nil
		}
		if err := s.compare(ctx, tenant, m, man, rep); err != nil {
			return err
		}
		rep.Report(jobs.Progress{Phase: "drop", TopicsDone: len(man.Topics), TopicsTotal: len(man.Topics), Rows: man.Rows})
		if err := s.d.Rows.DropTable(ctx, tenant, m); err != nil {
			return apperr.Wrap(apperr.Busy, "dropping the month table failed", err)
		}
		s.changed(tenant, m)
		return nil
	})
	return s.done(ctx, "drop", tenant, m, err)
}

// compare reads every archived chunk (checking its hash) and the same rows from the table, and
// fails on the first difference; the table must hold no other rows either.
func (s *Service) compare(ctx context.Context, tenant string, m month.Month, man *archive.Manifest, rep jobs.Reporter) error {
	p := jobs.Progress{Phase: "verify", TopicsTotal: len(man.Topics)}
	for _, t := range man.Topics {
		after := int64(0)
		for _, c := range t.Chunks {
			archived, err := s.d.Reader.Chunk(ctx, c, t.Topic, false)
			if err != nil {
				return apperr.Wrap(apperr.Busy, "the archive does not read back intact", err)
			}
			live, err := s.d.Rows.Rows(ctx, tenant, m, t.Topic, after, len(archived))
			if err != nil {
				return apperr.Wrap(apperr.Busy, "month table unavailable", err)
			}
			if err := sameRecords(live, archived); err != nil {
				return refused("the table of %s differs from its archive (%v); archive it again before dropping", m, err)
			}
			after = c.MaxSeq
			p.Rows += c.Count
			p.Chunks++
		}
		extra, err := s.d.Rows.Rows(ctx, tenant, m, t.Topic, after, 1)
		if err != nil {
			return apperr.Wrap(apperr.Busy, "month table unavailable", err)
		}
		if len(extra) > 0 {
			return refused("the table of %s holds %s seq %d, which the archive lacks; archive it again before dropping", m, t.Topic, extra[0].Seq)
		}
		p.TopicsDone++
		rep.Report(p)
	}
	total, err := s.d.Rows.Count(ctx, tenant, m)
	if err != nil {
		return apperr.Wrap(apperr.Busy, "month table unavailable", err)
	}
	if total != man.Rows {
		return refused("the table of %s holds %d rows, its archive %d; archive it again before dropping", m, total, man.Rows)
	}
	return nil
}

// Restore brings an archived month back online: the table is created from the template when
// it was dropped, every archived row is loaded (rows still there are kept), each topic's rows
// are checked against the manifest, and the month is sealed again. The archive files stay.
func (s *Service) Restore(ctx context.Context, tenant string, m month.Month, rep jobs.Reporter) error {
	err := s.exclusively(ctx, tenant, m, func(ctx context.Context) error {
		man, err := s.archived(ctx, tenant, m)
		if err != nil {
			return err
		}
		if err := s.d.Rows.CreateTable(ctx, tenant, m); err != nil {
			return apperr.Wrap(apperr.Busy, "creating the month table failed", err)
		}
		p := jobs.Progress{Phase: "restore", TopicsTotal: len(man.Topics)}
		rep.Report(p)
		for _, t := range man.Topics {
			for _, c := range t.Chunks {
				recs, err := s.d.Reader.Chunk(ctx, c, t.Topic, false)
				if err != nil {
					return apperr.Wrap(apperr.Busy, "the archive does not read back intact", err)
				}
				if err := s.d.Rows.Load(ctx, tenant, m, recs); err != nil {
					return apperr.Wrap(apperr.Busy, "loading the month table failed", err)
				}
				p.Rows += c.Count
				p.Chunks++
				rep.Report(p)
			}
			if err := s.checkRestored(ctx, tenant, m, t); err != nil {
				return err
			}
			p.TopicsDone++
			rep.Report(p)
		}
		total, err := s.d.Rows.Count(ctx, tenant, m)
		if err != nil {
			return apperr.Wrap(apperr.Busy, "month table unavailable", err)
		}
		if total != man.Rows {
			return refused("the restored table of %s holds %d rows, its archive %d", m, total, man.Rows)
		}
		if err := s.d.Catalog.SetState(ctx, tenant, m, shard.Archived, shard.Sealed); err != nil {
			return apperr.Wrap(apperr.Busy, "marking the month sealed failed", err)
		}
		s.changed(tenant, m)
		return nil
	})
	return s.done(ctx, "restore", tenant, m, err)
}

// checkRestored compares a topic's rows in the table with its manifest entry.
func (s *Service) checkRestored(ctx context.Context, tenant string, m month.Month, t archive.TopicEntry) error {
	seg, found, err := s.d.Mirror.TableSegment(ctx, tenant, m, t.Topic)
	if err != nil {
		return apperr.Wrap(apperr.Busy, "month table unavailable", err)
	}
	if !found || seg.Count != t.Count || seg.MinSeq != t.MinSeq || seg.MaxSeq != t.MaxSeq {
		return refused("restored %s holds seqs %d-%d (%d rows), the archive %d-%d (%d rows)",
			t.Topic, seg.MinSeq, seg.MaxSeq, seg.Count, t.MinSeq, t.MaxSeq, t.Count)
	}
	return nil
}

// Purge ends an archived month for good (retention, seed 000 §3.3 rule 5): for each topic its
// route-mirror row, its Redis route segment, its file index entries; the month's search index
// entries; the table if still there; the archive files, manifest last; and the catalog row.
// Mirror rows go before routes, so a route rebuilt meanwhile cannot bring a segment back. A
// purge that stops half-way is run again: the manifest still names every topic.
func (s *Service) Purge(ctx context.Context, tenant string, m month.Month, rep jobs.Reporter) error {
	err := s.exclusively(ctx, tenant, m, func(ctx context.Context) error {
		if err := s.outsideWindow(ctx, m); err != nil {
			return err
		}
		man, err := s.archived(ctx, tenant, m)
		if err != nil {
			return err
		}
		p := jobs.Progress{Phase: "purge", TopicsTotal: len(man.Topics)}
		rep.Report(p)
		for _, t := range man.Topics {
			if err := s.purgeTopic(ctx, tenant, m, t); err != nil {
				return err
			}
			p.TopicsDone++
			p.Rows += t.Count
			rep.Report(p)
		}
		if s.d.Search != nil {
			if _, err := s.d.Search.RemoveMonth(ctx, tenant, m); err != nil {
				return apperr.Wrap(apperr.Busy, "search index unavailable", err)
			}
		}
		if err := s.d.Rows.DropTable(ctx, tenant, m); err != nil {
			return apperr.Wrap(apperr.Busy, "dropping the month table failed", err)
		}
		if err := s.deleteFiles(ctx, tenant, m); err != nil {
			return err
		}
		if err := s.d.Purged.Unregister(ctx, tenant, m); err != nil {
			return apperr.Wrap(apperr.Busy, "catalog unavailable", err)
		}
		s.changed(tenant, m)
		return nil
	})
	return s.done(ctx, "purge", tenant, m, err)
}

func (s *Service) purgeTopic(ctx context.Context, tenant string, m month.Month, t archive.TopicEntry) error {
	if err := s.d.Purged.DeleteMirrorRow(ctx, tenant, t.Topic, m); err != nil {
		return apperr.Wrap(apperr.Busy, "route mirror unavailable", err)
	}
	if err := s.d.Routes.RemoveMonth(ctx, tenant, t.Topic, m); err != nil {
		return apperr.Wrap(apperr.Busy, "route cache unavailable", err)
	}
	if s.d.Files != nil {
		if err := s.d.Files.RemoveFileRange(ctx, tenant, t.Topic, t.MinSeq, t.MaxSeq); err != nil {
			return apperr.Wrap(apperr.Busy, "file index unavailable", err)
		}
	}
	return nil
}

// deleteFiles removes the month's archive files, the manifest last.
func (s *Service) deleteFiles(ctx context.Context, tenant string, m month.Month) error {
	keys, err := s.d.Blobs.List(ctx, archive.MonthPrefix(tenant, m))
	if err != nil {
		return apperr.Wrap(apperr.Busy, "archive storage unavailable", err)
	}
	manifest := archive.ManifestKey(tenant, m)
	for _, k := range keys {
		if k == manifest {
			continue
		}
		if err := s.d.Blobs.Delete(ctx, k); err != nil {
			return apperr.Wrap(apperr.Busy, "archive storage unavailable", err)
		}
	}
	if err := s.d.Blobs.Delete(ctx, manifest); err != nil {
		return apperr.Wrap(apperr.Busy, "archive storage unavailable", err)
	}
	return nil
}
