package history

import (
	"context"
	"slices"

	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/message"
)

// Context sizes: messages on each side of the target.
const (
	DefaultContext = 20
	MaxContext     = 100
)

// ContextRequest asks for the messages around one seq, e.g. a reply's original.
type ContextRequest struct {
	Tenant string
	User   int64 // 0 for admin reads
	Topic  string
	Seq    int64
	N      int // per side; 0 means DefaultContext
}

// Context returns up to N messages before Seq, the message at Seq, and up to N after it,
// ascending (seed 000 §6.5). Each side starts in the target's month and continues into the
// neighbouring months while short; deleted messages are left out. A target that is absent,
// deleted or hidden from the user is 40401.
func (s *Service) Context(ctx context.Context, r ContextRequest) ([]message.Message, error) {
	if r.Seq <= 0 {
		return nil, apperr.New(apperr.InvalidArgument, "seq must be positive")
	}
	n := r.N
	switch {
	case n == 0:
		n = DefaultContext
	case n < 0 || n > MaxContext:
		return nil, apperr.New(apperr.InvalidArgument, "n must be 1-100")
	}
	if err := s.authorize(ctx, r.Tenant, r.User, r.Topic); err != nil {
		return nil, err
	}
	st := newStats()
	defer s.observe(st)
	tg := &target{tenant: r.Tenant, topic: r.Topic}
	rt, err := s.route(ctx, tg, anySeq)
	if err != nil {
		return nil, err
	}
	before, err := s.read(ctx, page{target: tg, viewer: r.User, cursor: r.Seq, need: n, desc: true}, rt, st)
	if err != nil {
		return nil, err
	}
	// The forward side starts at the target itself, so it is found (and filtered) like its neighbours.
	after, err := s.read(ctx, page{target: tg, viewer: r.User, cursor: r.Seq - 1, need: n + 1}, rt, st)
	if err != nil {
		return nil, err
	}
	if len(after) == 0 || after[0].Seq != r.Seq {
		return nil, message.ErrNotFound
	}
	slices.Reverse(before)
	return append(before, after...), nil
}
