package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/imdhq/imd/adapters/mysql/sqlcdb"
	"github.com/imdhq/imd/core/domain/msgref"
	"github.com/imdhq/imd/ports"
)

// References implements ports.Favorites, ports.GroupFiles and ports.References on
// im_favorites, im_group_files and t_reports: references by topic+seq, never by month table;
// and ports.MediaRefs on im_media_refs.
type References struct {
	cluster *Cluster
}

var (
	_ ports.Favorites  = (*References)(nil)
	_ ports.GroupFiles = (*References)(nil)
	_ ports.References = (*References)(nil)
	_ ports.MediaRefs  = (*References)(nil)
)

// NewReferences returns the reference stores over the provisioned tenants of c.
func NewReferences(c *Cluster) *References { return &References{cluster: c} }

// AddFavorite inserts unless saved already, then reads the stored row back, so a second save
// returns the first one.
func (s *References) AddFavorite(ctx context.Context, tenant string, f msgref.Favorite) (msgref.Favorite, error) {
	t, err := s.cluster.tenant(tenant)
	if err != nil {
		return msgref.Favorite{}, err
	}
	err = t.q.AddFavorite(ctx, sqlcdb.AddFavoriteParams{UserID: f.User, Topic: f.Topic, Seqid: f.Seq, CreatedAt: f.CreatedAt.UTC()})
	if err != nil {
		return msgref.Favorite{}, fmt.Errorf("add favorite: %w", err)
	}
	row, err := t.q.GetFavorite(ctx, sqlcdb.GetFavoriteParams{UserID: f.User, Topic: f.Topic, Seqid: f.Seq})
	if err != nil {
		return msgref.Favorite{}, fmt.Errorf("read favorite back: %w", err)
	}
	return favorite(row), nil
}

func (s *References) RemoveFavorite(ctx context.Context, tenant string, user int64, topicName string, seq int64) (bool, error) {
	t, err := s.cluster.tenant(tenant)
	if err != nil {
		return false, err
	}
	n, err := t.q.RemoveFavorite(ctx, sqlcdb.RemoveFavoriteParams{UserID: user, Topic: topicName, Seqid: seq})
	if err != nil {
		return false, fmt.Errorf("remove favorite: %w", err)
	}
	return n > 0, nil
}

func (s *References) Favorites(ctx context.Context, tenant string, user, before int64, limit int) ([]msgref.Favorite, error) {
	t, err := s.cluster.tenant(tenant)
	if err != nil {
		return nil, err
	}
	if before <= 0 {
		before = math.MaxInt64
	}
	rows, err := t.q.FavoritesBefore(ctx, sqlcdb.FavoritesBeforeParams{UserID: user, ID: before, Limit: int32(min(limit, math.MaxInt32))})
	if err != nil {
		return nil, fmt.Errorf("favorites of %d: %w", user, err)
	}
	out := make([]msgref.Favorite, len(rows))
	for i, r := range rows {
		out[i] = favorite(r)
	}
	return out, nil
}

func favorite(r sqlcdb.ImFavorite) msgref.Favorite {
	return msgref.Favorite{ID: r.ID, User: r.UserID, Topic: r.Topic, Seq: r.Seqid, CreatedAt: r.CreatedAt.UTC()}
}

// AddFiles inserts the entries in one statement; entries recorded before are kept.
func (s *References) AddFiles(ctx context.Context, tenant string, files []msgref.File) error {
	if len(files) == 0 {
		return nil
	}
	t, err := s.cluster.tenant(tenant)
	if err != nil {
		return err
	}
	b := rowBatch{sep: sepValues}
	for _, f := range files {
		p := sqlcdb.AddGroupFilesParams{
			Topic: f.Topic, Seqid: f.Seq, MessageID: f.MsgID, FromUser: f.From, FileName: f.Name, FileSize: f.Size,
			ObjectKey: f.Key, ContentType: f.ContentType, CreatedAt: f.CreatedAt.UTC(),
		}
		if err := b.add(func(q *sqlcdb.Queries) error { return q.AddGroupFiles(ctx, p) }); err != nil {
			return fmt.Errorf("add group files: %w", err)
		}
	}
	if err := b.exec(ctx, t.db); err != nil {
		return fmt.Errorf("add group files: %w", err)
	}
	return nil
}

func (s *References) RemoveFile(ctx context.Context, tenant, topicName string, seq int64) error {
	t, err := s.cluster.tenant(tenant)
	if err != nil {
		return err
	}
	if err := t.q.RemoveGroupFile(ctx, sqlcdb.RemoveGroupFileParams{Topic: topicName, Seqid: seq}); err != nil {
		return fmt.Errorf("remove group file %s seq %d: %w", topicName, seq, err)
	}
	return nil
}

func (s *References) RemoveFileRange(ctx context.Context, tenant, topicName string, lo, hi int64) error {
	t, err := s.cluster.tenant(tenant)
	if err != nil {
		return err
	}
	if err := t.q.RemoveGroupFileRange(ctx, sqlcdb.RemoveGroupFileRangeParams{Topic: topicName, Lo: lo, Hi: hi}); err != nil {
		return fmt.Errorf("remove group files %s %d-%d: %w", topicName, lo, hi, err)
	}
	return nil
}

func (s *References) Files(ctx context.Context, tenant, topicName string, before int64, limit int) ([]msgref.File, error) {
	t, err := s.cluster.tenant(tenant)
	if err != nil {
		return nil, err
	}
	if before <= 0 {
		before = math.MaxInt64
	}
	rows, err := t.q.GroupFilesBefore(ctx, sqlcdb.GroupFilesBeforeParams{Topic: topicName, Seqid: before, Limit: int32(min(limit, math.MaxInt32))})
	if err != nil {
		return nil, fmt.Errorf("files of %s: %w", topicName, err)
	}
	out := make([]msgref.File, len(rows))
	for i, r := range rows {
		out[i] = msgref.File{
			Topic: r.Topic, Seq: r.Seqid, MsgID: r.MessageID, From: r.FromUser, Name: r.FileName, Size: r.FileSize,
			Key: r.ObjectKey, ContentType: r.ContentType, CreatedAt: r.CreatedAt.UTC(),
		}
	}
	return out, nil
}

// Referenced merges the seqs that favorites, reports and file entries name.
func (s *References) Referenced(ctx context.Context, tenant, topicName string, lo, hi int64) ([]int64, error) {
	t, err := s.cluster.tenant(tenant)
	if err != nil {
		return nil, err
	}
	var out []int64
	for name, query := range map[string]func(context.Context, string, int64, int64) ([]int64, error){
		"favorites": func(ctx context.Context, tp string, lo, hi int64) ([]int64, error) {
			return t.q.FavoritedSeqs(ctx, sqlcdb.FavoritedSeqsParams{Topic: tp, Lo: lo, Hi: hi})
		},
		"reports": func(ctx context.Context, tp string, lo, hi int64) ([]int64, error) {
			return t.q.ReportedSeqs(ctx, sqlcdb.ReportedSeqsParams{Topic: tp, Lo: lo, Hi: hi})
		},
		"files": func(ctx context.Context, tp string, lo, hi int64) ([]int64, error) {
			return t.q.FiledSeqs(ctx, sqlcdb.FiledSeqsParams{Topic: tp, Lo: lo, Hi: hi})
		},
	} {
		seqs, err := query(ctx, topicName, lo, hi)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("%s referencing %s: %w", name, topicName, err)
		}
		out = append(out, seqs...)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

func (s *References) AddMediaRef(ctx context.Context, tenant, key, topicName string) error {
	t, err := s.cluster.tenant(tenant)
	if err != nil {
		return err
	}
	if err := t.q.AddMediaRef(ctx, sqlcdb.AddMediaRefParams{ObjectKey: key, Topic: topicName}); err != nil {
		return fmt.Errorf("add media reference of %s: %w", topicName, err)
	}
	return nil
}

func (s *References) MediaTopics(ctx context.Context, tenant, key string, limit int) ([]string, error) {
	t, err := s.cluster.tenant(tenant)
	if err != nil {
		return nil, err
	}
	topics, err := t.q.MediaTopics(ctx, sqlcdb.MediaTopicsParams{ObjectKey: key, Limit: int32(min(limit, math.MaxInt32))})
	if err != nil {
		return nil, fmt.Errorf("media references of a key: %w", err)
	}
	return topics, nil
}
