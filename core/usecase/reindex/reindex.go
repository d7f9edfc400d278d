// Package reindex walks a tenant's stored months — live tables and archives alike — and hands
// every stored message to the indexes fed after COMMIT (search index, group file index), so
// what the send path's hooks missed, or everything before they existed, gets indexed: the
// backfill of seed 000 §6.6.
package reindex

import (
	"context"
	"fmt"

	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/kit/jobs"
	"github.com/imdhq/imd/ports"
)

// Sink takes stored messages; taking one twice must do no harm.
type Sink interface {
	Backfill(ctx context.Context, tenant string, msgs []message.Message) error
}

// Page sizes of the walk.
const (
	topicPage   = 500
	messagePage = 500
)

// Deps are what the walk reads and feeds.
type Deps struct {
	Catalog ports.ShardStore
	Mirror  ports.RouteMirror
	// Store reads months wherever they live (the archive-aware store).
	Store ports.MessageStore
	Sinks []Sink
}

// Service runs backfills.
type Service struct{ d Deps }

// New returns the service.
func New(d Deps) *Service { return &Service{d: d} }

// Run feeds every message of the months in [from, to] (0: unbounded) to the sinks, month by
// month, topic by topic, in seq order. It returns how many messages it fed.
func (s *Service) Run(ctx context.Context, tenant string, from, to month.Month, rep jobs.Reporter) (int64, error) {
	infos, err := s.d.Catalog.Catalog(ctx, tenant)
	if err != nil {
		return 0, apperr.Wrap(apperr.Busy, "catalog unavailable", err)
	}
	var months []month.Month
	for _, in := range infos {
		if (from == 0 || in.Month >= from) && (to == 0 || in.Month <= to) {
			months = append(months, in.Month)
		}
	}
	p := jobs.Progress{Phase: "reindex"}
	for _, m := range months {
		topics, err := s.topics(ctx, tenant, m)
		if err != nil {
			return p.Rows, err
		}
		p.Phase, p.TopicsDone, p.TopicsTotal = "reindex "+m.String(), 0, len(topics)
		rep.Report(p)
		for _, name := range topics {
			n, err := s.topic(ctx, tenant, m, name)
			p.Rows += n
			if err != nil {
				return p.Rows, err
			}
			p.TopicsDone++
			rep.Report(p)
		}
	}
	return p.Rows, nil
}

func (s *Service) topics(ctx context.Context, tenant string, m month.Month) ([]string, error) {
	var out []string
	for after := ""; ; {
		page, err := s.d.Mirror.TopicsIn(ctx, tenant, m, after, topicPage)
		if err != nil {
			return nil, apperr.Wrap(apperr.Busy, "route mirror unavailable", err)
		}
		out = append(out, page...)
		if len(page) < topicPage {
			return out, nil
		}
		after = page[len(page)-1]
	}
}

// topic feeds one topic's messages of one month.
func (s *Service) topic(ctx context.Context, tenant string, m month.Month, name string) (int64, error) {
	var n int64
	for after := int64(0); ; {
		msgs, err := s.d.Store.Page(ctx, tenant, m, message.PageQuery{Topic: name, After: after, Limit: messagePage})
		if err != nil {
			return n, apperr.Wrap(apperr.Busy, "message storage unavailable", fmt.Errorf("page %s of %s: %w", m, name, err))
		}
		if len(msgs) == 0 {
			return n, nil
		}
		for _, sink := range s.d.Sinks {
			if err := sink.Backfill(ctx, tenant, msgs); err != nil {
				return n, apperr.Wrap(apperr.Busy, "index unavailable", err)
			}
		}
		n += int64(len(msgs))
		after = msgs[len(msgs)-1].Seq
		if len(msgs) < messagePage {
			return n, nil
		}
	}
}
