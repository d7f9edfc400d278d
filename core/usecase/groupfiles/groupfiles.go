// Package groupfiles keeps and serves the index of each group's file messages (seed 000 §8:
// 群文件引用): entries are written after the message committed, dropped when the message is
// recalled or deleted for everyone, and listed by topic+seq, so a group's files are found
// whatever month, archive or restored table holds their messages.
package groupfiles

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/msgref"
	"github.com/imdhq/imd/core/domain/topic"
	"github.com/imdhq/imd/core/usecase/conversation"
	"github.com/imdhq/imd/ports"
)

// Page sizes of List.
const (
	DefaultLimit = 50
	MaxLimit     = 200
)

// Deps are the ports the index uses.
type Deps struct {
	Files    ports.GroupFiles
	Resolver *conversation.Resolver
	Hidden   ports.HiddenRanges
	Metrics  ports.Metrics
	Log      *slog.Logger
}

// Service indexes and lists group files.
type Service struct{ d Deps }

// New returns the service.
func New(d Deps) *Service { return &Service{d: d} }

var _ ports.CommitListener = (*Service)(nil)

// Committed records a file message and forgets one that was recalled or deleted for everyone.
// A failure is counted and logged; the reindex command writes a lost entry again.
func (s *Service) Committed(ctx context.Context, tenant string, m message.Message) {
	var err error
	if f, ok := msgref.FileOf(m); ok {
		err = s.d.Files.AddFiles(ctx, tenant, []msgref.File{f})
	} else if c, ok := msgref.ChangeOf(m); ok && c.Action != message.ActionEdit {
		err = s.d.Files.RemoveFile(ctx, tenant, m.Topic, c.Seq)
	} else {
		return
	}
	status := "ok"
	if err != nil {
		status = "failed"
		s.d.Log.WarnContext(ctx, "group file index not updated", "topic", m.Topic, "seq", m.Seq, "err", err)
	}
	s.d.Metrics.Inc("group_file_index_total", status)
}

// Backfill indexes the file messages among msgs (reindex of stored months).
func (s *Service) Backfill(ctx context.Context, tenant string, msgs []message.Message) error {
	var files []msgref.File
	for _, m := range msgs {
		if f, ok := msgref.FileOf(m); ok {
			files = append(files, f)
		}
	}
	if err := s.d.Files.AddFiles(ctx, tenant, files); err != nil {
		return fmt.Errorf("index group files: %w", err)
	}
	return nil
}

// List pages a group's files newest first (seq below before; 0 from the newest) for a member,
// leaving out what the member deleted for themself. next is the before of the following page,
// 0 when this one reached the oldest file.
func (s *Service) List(ctx context.Context, tenant string, user, groupID, before int64, limit int) (files []msgref.File, next int64, err error) {
	switch {
	case limit == 0:
		limit = DefaultLimit
	case limit < 0 || limit > MaxLimit:
		return nil, 0, apperr.New(apperr.InvalidArgument, fmt.Sprintf("limit must be 1-%d", MaxLimit))
	}
	if groupID <= 0 || before < 0 {
		return nil, 0, apperr.New(apperr.InvalidArgument, "group id must be positive and before not negative")
	}
	name := topic.ForGroup(groupID)
	if _, err := s.d.Resolver.ForRead(ctx, tenant, user, conversation.Address{Topic: name}); err != nil {
		return nil, 0, err
	}
	files, err = s.d.Files.Files(ctx, tenant, name, before, limit)
	if err != nil {
		return nil, 0, apperr.Wrap(apperr.Busy, "file index unavailable", err)
	}
	if len(files) == 0 {
		return files, 0, nil
	}
	if len(files) == limit {
		next = files[len(files)-1].Seq
	}
	hidden, err := s.d.Hidden.HiddenRanges(ctx, tenant, name, user, files[len(files)-1].Seq, files[0].Seq)
	if err != nil {
		return nil, 0, apperr.Wrap(apperr.Busy, "deleted ranges unavailable", err)
	}
	out := files[:0]
	for _, f := range files {
		if !hiddenSeq(f.Seq, hidden) {
			out = append(out, f)
		}
	}
	return out, next, nil
}

func hiddenSeq(seq int64, ranges []ports.SeqRange) bool {
	for _, r := range ranges {
		if seq >= r.Low && seq < r.Hi {
			return true
		}
	}
	return false
}
