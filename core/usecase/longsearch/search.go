package longsearch

import (
	"context"
	"fmt"
	"time"

	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/fulltext"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/usecase/conversation"
	"github.com/imdhq/imd/core/usecase/history"
	"github.com/imdhq/imd/ports"
)

// Search bounds.
const (
	DefaultLimit = 20
	MaxLimit     = 50
	MaxOffset    = 1000
	MaxText      = 200 // bytes
	// MaxTopics bounds the conversations one user's search covers.
	MaxTopics = 10_000
	// overfetch asks the index for more hits than the page needs, since re-checks drop some.
	overfetch = 2
)

// Request is one long-term search.
type Request struct {
	Tenant string
	User   int64  // 0: an operator, every topic, no deleted ranges
	Topic  string // optional: one conversation
	Text   string
	From   time.Time // optional bounds of created_at: From ≤ t < To
	To     time.Time
	Offset int // hits already consumed by earlier pages
	Limit  int
}

// Result is one page: the messages, and the offset of the next page.
type Result struct {
	Messages   []message.Message
	NextOffset int
	HasMore    bool
}

// SearchDeps are what a search reads.
type SearchDeps struct {
	Index    ports.SearchIndex
	History  *history.Service
	Resolver *conversation.Resolver
	Groups   ports.Groups
	Hidden   ports.HiddenRanges
}

// Searcher answers long-term searches.
type Searcher struct{ d SearchDeps }

// NewSearcher returns the searcher.
func NewSearcher(d SearchDeps) *Searcher { return &Searcher{d: d} }

// Search asks the index for topic+seq hits in the user's conversations, then reads each
// message through core/usecase/history — membership is checked again there — and keeps only normal
// messages outside the user's deleted ranges, newest first.
func (s *Searcher) Search(ctx context.Context, r Request) (Result, error) {
	if err := validate(&r); err != nil {
		return Result{}, err
	}
	topics, err := s.topics(ctx, r)
	if err != nil {
		return Result{}, err
	}
	if topics != nil && len(topics) == 0 {
		return Result{NextOffset: r.Offset}, nil
	}
	res := Result{NextOffset: r.Offset}
	for res.NextOffset <= MaxOffset {
		want := (r.Limit - len(res.Messages)) * overfetch
		hits, err := s.d.Index.Search(ctx, r.Tenant, fulltext.Query{
			Text: r.Text, Topics: topics, From: r.From, To: r.To, Offset: res.NextOffset, Limit: want,
		})
		if err != nil {
			return Result{}, apperr.Wrap(apperr.Busy, "search index unavailable", err)
		}
		for i, h := range hits {
			m, ok, err := s.visible(ctx, r, h)
			if err != nil {
				return Result{}, err
			}
			if ok {
				res.Messages = append(res.Messages, m)
			}
			if len(res.Messages) == r.Limit {
				res.NextOffset += i + 1
				// More may follow; the next page says, possibly by coming back empty.
				res.HasMore = res.NextOffset <= MaxOffset
				return res, nil
			}
		}
		res.NextOffset += len(hits)
		if len(hits) < want {
			return res, nil
		}
	}
	return res, nil
}

func validate(r *Request) error {
	switch {
	case r.Text == "" || len(r.Text) > MaxText:
		return apperr.New(apperr.InvalidArgument, fmt.Sprintf("q must be 1-%d bytes", MaxText))
	case r.Offset < 0 || r.Offset > MaxOffset:
		return apperr.New(apperr.InvalidArgument, fmt.Sprintf("offset must be 0-%d", MaxOffset))
	case r.Limit < 0 || r.Limit > MaxLimit:
		return apperr.New(apperr.InvalidArgument, fmt.Sprintf("limit must be 1-%d", MaxLimit))
	case !r.From.IsZero() && !r.To.IsZero() && !r.To.After(r.From):
		return apperr.New(apperr.InvalidArgument, "from must be before to")
	}
	if r.Limit == 0 {
		r.Limit = DefaultLimit
	}
	return nil
}

// topics is what the search covers: the one topic asked for (after a read check), every
// conversation of the user, or nil (every topic) for an operator.
func (s *Searcher) topics(ctx context.Context, r Request) ([]string, error) {
	if r.Topic != "" {
		if r.User != 0 {
			if _, err := s.d.Resolver.ForRead(ctx, r.Tenant, r.User, conversation.Address{Topic: r.Topic}); err != nil {
				return nil, err
			}
		}
		return []string{r.Topic}, nil
	}
	if r.User == 0 {
		return nil, nil
	}
	topics := []string{}
	for after := int64(0); len(topics) < MaxTopics; {
		page, err := s.d.Groups.UserConversations(ctx, r.Tenant, r.User, 0, after, 1000)
		if err != nil {
			return nil, apperr.Wrap(apperr.Busy, "conversations unavailable", err)
		}
		for _, c := range page {
			topics = append(topics, c.Topic)
		}
		if len(page) < 1000 {
			break
		}
		after = page[len(page)-1].ID
	}
	return topics, nil
}

// visible reads a hit's message as the user and says whether to return it.
func (s *Searcher) visible(ctx context.Context, r Request, h fulltext.Hit) (message.Message, bool, error) {
	m, err := s.d.History.Get(ctx, r.Tenant, r.User, h.Topic, h.Seq)
	switch apperr.CodeOf(err) {
	case apperr.OK:
	case apperr.NotFound, apperr.Forbidden:
		return message.Message{}, false, nil // purged, or the user left since it was indexed
	default:
		return message.Message{}, false, err
	}
	if m.Status != message.StatusNormal {
		return message.Message{}, false, nil
	}
	if r.User != 0 {
		hidden, err := s.d.Hidden.HiddenRanges(ctx, r.Tenant, h.Topic, r.User, h.Seq, h.Seq)
		if err != nil {
			return message.Message{}, false, apperr.Wrap(apperr.Busy, "deleted ranges unavailable", err)
		}
		if len(hidden) > 0 {
			return message.Message{}, false, nil
		}
	}
	return m, true, nil
}
