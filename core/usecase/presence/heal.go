package presence

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/imdhq/imd/core/domain/presence"
	"github.com/imdhq/imd/ports"
)

// healTimeout bounds the reads and the push of one user's state after a heal.
const healTimeout = 3 * time.Second

// healItem is one user whose state a heal pushes.
type healItem struct {
	tenant string
	user   int64
}

// healQueue holds the users whose change waits for the registry to be whole again (a release
// during a loss, DESIGN §13 "Unknown until healed") and those whose state is due to be pushed
// since it is, each once and at most limit in all: a heal never grows memory without bound.
type healQueue struct {
	mu      sync.Mutex
	limit   int
	waiting map[string][]int64
	due     []healItem
	held    map[healItem]bool // in waiting or due
	wake    chan struct{}
}

func newHealQueue(limit int) *healQueue {
	return &healQueue{limit: limit, waiting: map[string][]int64{}, held: map[healItem]bool{}, wake: make(chan struct{}, 1)}
}

// hold marks it held unless it is already or the queue is full; the caller holds mu.
func (q *healQueue) hold(it healItem, m ports.Metrics) bool {
	if q.held[it] {
		return false
	}
	if len(q.held) >= q.limit {
		m.Inc("presence_heal_pushes_total", "dropped")
		return false
	}
	q.held[it] = true
	return true
}

// wait keeps users until the tenant's registry heals.
func (q *healQueue) wait(tenant string, users []int64, m ports.Metrics) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, u := range users {
		if q.hold(healItem{tenant, u}, m) {
			q.waiting[tenant] = append(q.waiting[tenant], u)
		}
	}
}

// release makes the users waiting on tenant, and users, due.
func (q *healQueue) release(tenant string, users []int64, m ports.Metrics) {
	q.mu.Lock()
	for _, u := range q.waiting[tenant] {
		q.due = append(q.due, healItem{tenant, u})
	}
	delete(q.waiting, tenant)
	for _, u := range users {
		if it := (healItem{tenant, u}); q.hold(it, m) {
			q.due = append(q.due, it)
		}
	}
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// next takes the oldest due user.
func (q *healQueue) next() (healItem, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.due) == 0 {
		return healItem{}, false
	}
	it := q.due[0]
	q.due = q.due[1:]
	delete(q.held, it)
	return it, true
}

// Healed follows a keeper pass that found the registry whole (cluster.Keeper): users (those
// connected here, after a heal) and those whose change waited for a whole registry get their
// state pushed by RunHeals. It does not wait.
func (s *Service) Healed(_ context.Context, tenant string, users []int64) {
	s.heals.release(tenant, users, s.d.Metrics)
}

// RunHeals pushes the state of the users a heal made due, at most HealRate a second, until
// ctx ends: after a loss every node has its users' state to tell, and a node with 100,000
// connections must not push them all at once (DESIGN §13 "Unknown until healed").
func (s *Service) RunHeals(ctx context.Context) {
	pace := time.NewTicker(max(time.Second/time.Duration(s.cfg.HealRate), time.Microsecond))
	defer pace.Stop()
	for {
		it, ok := s.heals.next()
		if !ok {
			select {
			case <-ctx.Done():
				return
			case <-s.heals.wake:
			}
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-pace.C:
		}
		s.heal(ctx, it)
	}
}

// heal pushes one user's state as the whole registry says it; a registry lost again keeps the
// user for the next heal.
func (s *Service) heal(ctx context.Context, it healItem) {
	ctx, cancel := context.WithTimeout(ctx, healTimeout)
	defer cancel()
	on, err := s.online(ctx, it.tenant, []int64{it.user})
	if errors.Is(err, errIncomplete) {
		s.heals.wait(it.tenant, []int64{it.user}, s.d.Metrics)
		return
	}
	if err != nil {
		s.d.Log.WarnContext(ctx, "presence unreadable after a heal; state not pushed", "tenant", it.tenant, "user_id", it.user, "err", err)
		return
	}
	records, err := s.d.Records.Records(ctx, it.tenant, []int64{it.user})
	if err != nil {
		s.d.Log.WarnContext(ctx, "presence records unreadable after a heal; state not pushed", "tenant", it.tenant, "user_id", it.user, "err", err)
		return
	}
	if records[it.user].Hidden {
		return
	}
	s.push(ctx, it.tenant, presence.Seen(it.user, on[it.user], records[it.user]))
	s.d.Metrics.Inc("presence_heal_pushes_total", "pushed")
}
