package listrepair

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/usecase/history"
)

// After a Redis failover (DESIGN §5 "After a Redis failover", DESIGN §1.13): replication is
// asynchronous, so the promoted replica (or a restarted master) lacks the last writes of the
// master before it, list updates among them. The list script writes each batch's marker and
// its unread increment in one script, which Redis replicates whole: a message whose batch
// marker is gone lost its increment with it, and one whose marker survived kept it. So
// re-applying every message stored around the failover, each under its own markers, counts
// exactly the lost ones again. Nothing in the data says a failover happened: the node watches
// the masters' lineage (ports.RedisLineage) and, when it changes, heals the window from
// Lookback before the lineage was last seen unchanged up to the change.

// heal is one window of messages to re-apply, the same for every tenant.
type heal struct {
	id       int
	from, to time.Time
}

// rollbacks is what the node knows of Redis' lineage and the heals it owes each tenant.
type rollbacks struct {
	lineage string    // the lineage last seen; "" before the first answer
	seen    time.Time // when it was last seen
	next    int       // the id of the next heal
	heals   []heal    // oldest first, pruned once past the markers' life
	done    map[string]int
}

// Watch asks Redis for its lineage and, when it changed since the last answer, owes every
// tenant a heal of the window it may have lost. RunEvery calls it before each round of passes;
// the first answer only records the lineage (what came before is not this node's to know).
func (s *Service) Watch(ctx context.Context) error {
	l, err := s.d.Lineage.Lineage(ctx)
	if err != nil {
		return fmt.Errorf("redis lineage: %w", err)
	}
	now := s.d.Clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	r := &s.rollbacks
	if r.lineage != "" && l != r.lineage {
		h := heal{id: r.next, from: r.seen.Add(-s.cfg.Lookback), to: now}
		r.next++
		r.heals = append(r.heals, h)
		s.d.Metrics.Inc("redis_lineage_change_total")
		s.d.Log.WarnContext(ctx, "Redis masters replaced or restarted: the lists re-apply the messages stored around it",
			"from", h.from, "to", h.to, "lineage", l)
	}
	r.lineage, r.seen = l, now
	// A heal whose whole window is older than the markers' life has nothing left it may apply.
	for len(r.heals) > 0 && now.Sub(r.heals[0].to) > s.cfg.Markers {
		r.heals = r.heals[1:]
	}
	return nil
}

// heals re-applies the windows the tenant is owed once they have settled (the jobs still on
// their way act first), oldest first; one that fails is tried again in the next pass.
func (s *Service) heals(ctx context.Context, tenant string, rep *Report) error {
	now := s.d.Clock.Now()
	s.mu.Lock()
	var owed []heal
	for _, h := range s.rollbacks.heals {
		if h.id >= s.rollbacks.done[tenant] && !now.Before(h.to.Add(s.cfg.Settle)) {
			owed = append(owed, h)
		}
	}
	s.mu.Unlock()
	for _, h := range owed {
		// Markers older than their life may be gone with no failover: re-applying those
		// messages would count them twice, so the window starts no earlier.
		from := h.from
		if oldest := now.Add(-s.cfg.Markers); from.Before(oldest) {
			from = oldest
		}
		if err := s.reapply(ctx, tenant, from, h.to, rep); err != nil {
			return s.failed(fmt.Errorf("list heal of %s from %s to %s: %w", tenant, from, h.to, err))
		}
		rep.Healed++
		s.mu.Lock()
		s.rollbacks.done[tenant] = h.id + 1
		s.mu.Unlock()
	}
	return nil
}

// reapply re-applies every message of the tenant created from from to to: the mirror names the
// topics with a message since from in each month the window reaches, and each topic's history
// is read back from its newest message to the first before from.
func (s *Service) reapply(ctx context.Context, tenant string, from, to time.Time, rep *Report) error {
	months, err := s.months(ctx, tenant, from)
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	var errs error
	for _, m := range months {
		for after := ""; ; {
			topics, err := s.d.Mirror.TopicsSince(ctx, tenant, m, from, after, s.cfg.Topics)
			if err != nil {
				return fmt.Errorf("topics of %s since %s: %w", m, from, err)
			}
			for _, topic := range topics {
				if !seen[topic] {
					seen[topic] = true
					errs = errors.Join(errs, s.reapplyTopic(ctx, tenant, topic, from, to, rep))
				}
			}
			if len(topics) < s.cfg.Topics {
				break
			}
			after = topics[len(topics)-1]
		}
	}
	return errs
}

// reapplyTopic re-applies the topic's messages created from from to to, a page at a time.
func (s *Service) reapplyTopic(ctx context.Context, tenant, topic string, from, to time.Time, rep *Report) error {
	for before := int64(0); ; {
		page, err := s.d.History.History(ctx, history.HistoryRequest{Tenant: tenant, Topic: topic, Before: before, Limit: s.cfg.Messages})
		if err != nil {
			return fmt.Errorf("messages of %s before %d: %w", topic, before, err)
		}
		var in []message.Message
		for _, m := range page {
			if !m.CreatedAt.Before(from) && !m.CreatedAt.After(to) {
				in = append(in, m)
			}
		}
		if err := s.apply(ctx, tenant, topic, in, rep); err != nil {
			return err
		}
		if len(page) < s.cfg.Messages || page[len(page)-1].CreatedAt.Before(from) {
			return nil
		}
		before = page[len(page)-1].Seq
	}
}
