// Package replies resolves a reply's reference to the message it answers (reply_seq, seed 000
// §6.5, §12.7) into a short preview, by topic+seq: the original is found in whatever month,
// archive or restored table holds it.
package replies

import (
	"context"
	"unicode/utf8"

	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/fulltext"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/usecase/history"
	"github.com/imdhq/imd/ports"
)

// PreviewRunes bounds the text of a preview.
const PreviewRunes = 80

// Preview is what a client shows above a reply: who wrote the original, when, its type and
// the start of its text. A recalled or deleted original shows its status and no text.
type Preview struct {
	Topic     string
	Seq       int64
	MsgID     int64
	From      int64
	Type      string
	Status    message.Status
	Text      string
	Truncated bool
	CreatedAt int64 // Unix ms
}

// Service builds previews.
type Service struct {
	history *history.Service
	hidden  ports.HiddenRanges
}

// New returns the service.
func New(h *history.Service, hidden ports.HiddenRanges) *Service {
	return &Service{history: h, hidden: hidden}
}

// Of returns the preview of the message that message seq of topic replies to. The user must
// be able to read the reply; an original the user deleted for themself, or one gone, is
// 40401, as is a message that replies to nothing.
func (s *Service) Of(ctx context.Context, tenant string, user int64, topicName string, seq int64) (Preview, error) {
	reply, err := s.history.Get(ctx, tenant, user, topicName, seq)
	if err != nil {
		return Preview{}, err
	}
	if reply.ReplySeq <= 0 || reply.Status != message.StatusNormal {
		return Preview{}, apperr.New(apperr.NotFound, "the message replies to nothing")
	}
	orig, err := s.history.Get(ctx, tenant, user, topicName, reply.ReplySeq)
	if err != nil {
		return Preview{}, err
	}
	if user != 0 {
		hidden, err := s.hidden.HiddenRanges(ctx, tenant, topicName, user, orig.Seq, orig.Seq)
		if err != nil {
			return Preview{}, apperr.Wrap(apperr.Busy, "deleted ranges unavailable", err)
		}
		if len(hidden) > 0 {
			return Preview{}, message.ErrNotFound
		}
	}
	p := Preview{
		Topic: orig.Topic, Seq: orig.Seq, MsgID: orig.MsgID, From: orig.From, Type: orig.Type,
		Status: orig.Status, CreatedAt: orig.CreatedAt.UnixMilli(),
	}
	if orig.Status == message.StatusNormal {
		p.Text, p.Truncated = clip(fulltext.TextOf(orig.Content), PreviewRunes)
	}
	return p, nil
}

func clip(s string, n int) (string, bool) {
	if utf8.RuneCountInString(s) <= n {
		return s, false
	}
	return string([]rune(s)[:n]), true
}
