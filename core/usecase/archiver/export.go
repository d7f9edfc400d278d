package archiver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/archive"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/route"
	"github.com/imdhq/imd/core/domain/shard"
	"github.com/imdhq/imd/core/kit/jobs"
	"github.com/imdhq/imd/core/store/archivereader"
)

// Report is what the checks before archiving found of a month (seed 000 §10): no delivery
// backlog or dead letters, no pending route repairs, every topic's rows matching its route
// mirror segment, the table's row count matching the mirror, and every favorite, report and
// file entry into the month resolving.
type Report struct {
	Month    string      `json:"month"`
	State    shard.State `json:"state"`
	Topics   int         `json:"topics"`
	Rows     int64       `json:"rows"`
	Problems []string    `json:"problems"`
}

// OK reports whether the month may be archived.
func (r Report) OK() bool { return len(r.Problems) == 0 }

// maxProblems bounds what a report lists; the first ones tell the operator what to fix.
const maxProblems = 50

func (r *Report) problem(format string, args ...any) {
	if len(r.Problems) < maxProblems {
		r.Problems = append(r.Problems, fmt.Sprintf(format, args...))
	}
}

// Check runs every check of Archive over a sealed month and writes nothing. It reads the
// whole month once.
func (s *Service) Check(ctx context.Context, tenant string, m month.Month, rep jobs.Reporter) (Report, error) {
	r, _, err := s.walk(ctx, tenant, m, false, rep)
	return r, err
}

// Archive exports a sealed month, verifies every file by reading it back, writes the manifest
// and marks the month archived. A month already archived whose table is still there is
// exported again (e.g. after an operator fixed a row): its manifest is replaced. The table
// stays; Drop removes it.
func (s *Service) Archive(ctx context.Context, tenant string, m month.Month, rep jobs.Reporter) (*archive.Manifest, error) {
	var man *archive.Manifest
	err := s.exclusively(ctx, tenant, m, func(ctx context.Context) error {
		r, got, err := s.walk(ctx, tenant, m, true, rep)
		if err != nil {
			return err
		}
		if !r.OK() {
			return refused("month %s cannot be archived: %s", m, r.Problems[0])
		}
		man = got
		chunks := 0
		for _, t := range man.Topics {
			chunks += len(t.Chunks)
		}
		rep.Report(jobs.Progress{Phase: "manifest", TopicsDone: r.Topics, TopicsTotal: r.Topics, Rows: r.Rows, Chunks: chunks})
		if err := s.putManifest(ctx, man); err != nil {
			return err
		}
		if r.State == shard.Sealed {
			if err := s.d.Manager.Archive(ctx, tenant, m); err != nil {
				return err
			}
		}
		s.changed(tenant, m)
		return nil
	})
	return man, s.done(ctx, "archive", tenant, m, err)
}

// walk reads every topic of the month in seq order and checks it; with write it also stores
// each chunk and reads it back. It returns the report and, when writing, the manifest.
func (s *Service) walk(ctx context.Context, tenant string, m month.Month, write bool, rep jobs.Reporter) (Report, *archive.Manifest, error) {
	r := Report{Month: m.String(), Problems: []string{}}
	state, err := s.state(ctx, tenant, m)
	if err != nil {
		return r, nil, err
	}
	r.State = state
	switch state {
	case shard.Sealed:
	case shard.Archived:
		exists, err := s.d.Rows.TableExists(ctx, tenant, m)
		if err != nil {
			return r, nil, apperr.Wrap(apperr.Busy, "month table unavailable", err)
		}
		if !exists {
			return r, nil, apperr.New(apperr.Conflict, fmt.Sprintf("month %s is archived and its table dropped; restore it first", m))
		}
	default:
		return r, nil, apperr.New(apperr.Conflict, fmt.Sprintf("month is %s; only a sealed month can be archived", state))
	}
	if err := s.backlog(ctx, tenant, m, &r); err != nil {
		return r, nil, err
	}
	if write && !r.OK() {
		return r, nil, nil
	}
	topics, err := s.topics(ctx, tenant, m)
	if err != nil {
		return r, nil, err
	}
	man := &archive.Manifest{Format: archive.ManifestFormat, Tenant: tenant, Month: m.String(), CreatedAt: s.d.Clock.Now().UTC()}
	p := jobs.Progress{Phase: "export", TopicsTotal: len(topics)}
	if !write {
		p.Phase = "check"
	}
	rep.Report(p)
	for _, name := range topics {
		entry, err := s.exportTopic(ctx, tenant, m, name, write, &r, &p, rep)
		if err != nil {
			return r, nil, err
		}
		man.Topics = append(man.Topics, entry)
		man.Rows += entry.Count
		p.TopicsDone++
		rep.Report(p)
	}
	r.Topics, r.Rows = len(topics), man.Rows
	total, err := s.d.Rows.Count(ctx, tenant, m)
	if err != nil {
		return r, nil, apperr.Wrap(apperr.Busy, "month table unavailable", err)
	}
	if total != man.Rows {
		r.problem("the table holds %d rows, its topics in the route mirror %d", total, man.Rows)
	}
	return r, man, nil
}

// backlog adds what still waits for the month to the report.
func (s *Service) backlog(ctx context.Context, tenant string, m month.Month, r *Report) error {
	b, err := s.d.Deliveries.MonthBacklog(ctx, tenant, m)
	if err != nil {
		return apperr.Wrap(apperr.Busy, "deliver queue unavailable", err)
	}
	if !b.Empty() {
		r.problem("delivery backlog of the month: %d queued, %d processing, %d dead letters (partial scan: %v)", b.Queued, b.Processing, b.Dead, b.Partial)
	}
	pending, err := s.d.Repairs.Pending(ctx, tenant, m)
	if err != nil {
		return apperr.Wrap(apperr.Busy, "route repair queue unavailable", err)
	}
	if pending {
		r.problem("route repairs are pending")
	}
	return nil
}

// topics lists the month's topics from the route mirror, ascending.
func (s *Service) topics(ctx context.Context, tenant string, m month.Month) ([]string, error) {
	var out []string
	after := ""
	for {
		page, err := s.d.Mirror.TopicsIn(ctx, tenant, m, after, s.cfg.TopicPage)
		if err != nil {
			return nil, apperr.Wrap(apperr.Busy, "route mirror unavailable", err)
		}
		out = append(out, page...)
		if len(page) < s.cfg.TopicPage {
			return out, nil
		}
		after = page[len(page)-1]
	}
}

// exportTopic reads one topic's rows of the month chunk by chunk, stores and reads back each
// chunk when writing, and checks the rows against the mirror segment and the references.
func (s *Service) exportTopic(ctx context.Context, tenant string, m month.Month, name string, write bool, r *Report, p *jobs.Progress, rep jobs.Reporter) (archive.TopicEntry, error) {
	seg, err := s.segment(ctx, tenant, m, name)
	if err != nil {
		return archive.TopicEntry{}, err
	}
	entry := archive.TopicEntry{Topic: name}
	var seqs []int64
	for after := int64(0); ; {
		recs, err := s.d.Rows.Rows(ctx, tenant, m, name, after, s.cfg.ChunkRows)
		if err != nil {
			return archive.TopicEntry{}, apperr.Wrap(apperr.Busy, "month table unavailable", err)
		}
		if len(recs) == 0 {
			break
		}
		after = recs[len(recs)-1].Seq
		for _, rec := range recs {
			seqs = append(seqs, rec.Seq)
		}
		if write {
			c, err := s.putChunk(ctx, tenant, m, name, len(entry.Chunks)+1, recs)
			if err != nil {
				return archive.TopicEntry{}, err
			}
			entry.Chunks = append(entry.Chunks, c)
			p.Chunks++
		}
		p.Rows += int64(len(recs))
		rep.Report(*p)
		if len(recs) < s.cfg.ChunkRows {
			break
		}
	}
	entry.Count = int64(len(seqs))
	if len(seqs) > 0 {
		entry.MinSeq, entry.MaxSeq = seqs[0], seqs[len(seqs)-1]
	}
	if entry.Count != seg.Count || entry.MinSeq != seg.MinSeq || entry.MaxSeq != seg.MaxSeq {
		r.problem("%s: the table holds seqs %d-%d (%d rows), the route mirror says %d-%d (%d rows)",
			name, entry.MinSeq, entry.MaxSeq, entry.Count, seg.MinSeq, seg.MaxSeq, seg.Count)
	}
	refs, err := s.d.References.Referenced(ctx, tenant, name, seg.MinSeq, seg.MaxSeq)
	if err != nil {
		return archive.TopicEntry{}, apperr.Wrap(apperr.Busy, "references unavailable", err)
	}
	for _, seq := range refs {
		if _, found := slices.BinarySearch(seqs, seq); !found {
			r.problem("%s seq %d is referenced (favorite, report or file) but not stored in the month", name, seq)
		}
	}
	return entry, nil
}

// segment is the route mirror's segment of topic in m.
func (s *Service) segment(ctx context.Context, tenant string, m month.Month, name string) (route.Segment, error) {
	rt, err := s.d.Store.Segments(ctx, tenant, name)
	if err != nil {
		return route.Segment{}, apperr.Wrap(apperr.Busy, "route mirror unavailable", err)
	}
	for _, seg := range rt {
		if seg.Month == m {
			return seg, nil
		}
	}
	return route.Segment{Month: m}, nil
}

// putChunk stores one chunk, then reads it back and checks that it decodes to the same rows.
func (s *Service) putChunk(ctx context.Context, tenant string, m month.Month, name string, n int, recs []archive.Record) (archive.Chunk, error) {
	h := archive.ChunkHeader{
		Format: archive.ChunkFormat, Tenant: tenant, Month: m.String(), Topic: name,
		MinSeq: recs[0].Seq, MaxSeq: recs[len(recs)-1].Seq, Count: int64(len(recs)),
	}
	var buf bytes.Buffer
	if err := archive.EncodeChunk(&buf, h, recs); err != nil {
		return archive.Chunk{}, apperr.Wrap(apperr.Internal, "encoding an archive chunk failed", err)
	}
	sum := sha256.Sum256(buf.Bytes())
	c := archive.Chunk{
		Key: archive.ChunkKey(tenant, m, name, n), MinSeq: h.MinSeq, MaxSeq: h.MaxSeq, Count: h.Count,
		Bytes: int64(buf.Len()), SHA256: hex.EncodeToString(sum[:]),
	}
	if err := s.d.Blobs.Put(ctx, c.Key, buf.Bytes()); err != nil {
		return archive.Chunk{}, apperr.Wrap(apperr.Busy, "archive storage unavailable", err)
	}
	back, err := s.d.Blobs.Get(ctx, c.Key)
	if err != nil {
		return archive.Chunk{}, apperr.Wrap(apperr.Busy, "archive storage unavailable", err)
	}
	got, err := archivereader.DecodeVerified(back, c, name)
	if err != nil {
		return archive.Chunk{}, apperr.Wrap(apperr.Busy, "an archive chunk did not read back intact", err)
	}
	if err := sameRecords(got, recs); err != nil {
		return archive.Chunk{}, apperr.Wrap(apperr.Busy, "an archive chunk did not read back intact", fmt.Errorf("%s: %w", c.Key, err))
	}
	return c, nil
}

// putManifest stores the manifest last, so a manifest always names complete chunks, and
// reads it back.
func (s *Service) putManifest(ctx context.Context, man *archive.Manifest) error {
	raw, err := json.MarshalIndent(man, "", "  ")
	if err != nil {
		return apperr.Wrap(apperr.Internal, "encoding the manifest failed", err)
	}
	m, err := month.Parse(man.Month)
	if err != nil {
		return apperr.Wrap(apperr.Internal, "manifest month", err)
	}
	key := archive.ManifestKey(man.Tenant, m)
	if err := s.d.Blobs.Put(ctx, key, raw); err != nil {
		return apperr.Wrap(apperr.Busy, "archive storage unavailable", err)
	}
	back, err := s.d.Blobs.Get(ctx, key)
	if err != nil {
		return apperr.Wrap(apperr.Busy, "archive storage unavailable", err)
	}
	if !bytes.Equal(back, raw) {
		return apperr.New(apperr.Busy, "the archive manifest did not read back intact")
	}
	return nil
}

// sameRecords compares rows by their archived form, the one a restore loads.
func sameRecords(a, b []archive.Record) error {
	if len(a) != len(b) {
		return fmt.Errorf("%d rows, want %d", len(a), len(b))
	}
	for i := range a {
		ja, err := json.Marshal(a[i])
		if err != nil {
			return err
		}
		jb, err := json.Marshal(b[i])
		if err != nil {
			return err
		}
		if !bytes.Equal(ja, jb) {
			return fmt.Errorf("%s seq %d differs", a[i].Topic, a[i].Seq)
		}
	}
	return nil
}
