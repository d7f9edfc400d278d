package memory

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/imdhq/imd/core/domain/dialog"
	"github.com/imdhq/imd/core/domain/tenant"
	"github.com/imdhq/imd/ports"
)

// DialogStore is the in-memory ports.DialogStore, with the Redis adapter's rules: batches act
// once per marker, scores never go down, previews move forward by seq, rebuilds merge.
type DialogStore struct {
	clock func() time.Time

	mu       sync.Mutex
	tenants  map[string]*userLists
	previews map[string]map[int64]dialog.Preview // tenant → conversation → preview
}

type userLists struct {
	lists   map[int64]*lists
	markers map[string]markerSet     // once → applied batch indexes
	gaps    map[dialog.Gap]time.Time // ListGaps: gap (Noted unset) → when first noted
}

type markerSet struct {
	batches map[int]bool
	expires time.Time
}

// lists is one user's conversation lists.
type lists struct {
	unread, read map[int64]int64 // conversation → score
	counts       map[int64]int64
	muted        map[int64]bool
	pinned       map[int64]int64
	built        bool
}

var (
	_ ports.DialogStore = (*DialogStore)(nil)
	_ ports.ListGaps    = (*DialogStore)(nil)
)

// NewDialogStore returns empty lists; clock expires batch markers.
func NewDialogStore(clock func() time.Time) *DialogStore {
	return &DialogStore{clock: clock, tenants: make(map[string]*userLists), previews: make(map[string]map[int64]dialog.Preview)}
}

// of returns the tenant's lists; the caller holds s.mu.
func (s *DialogStore) of(name string) (*userLists, error) {
	if !tenant.Valid(name) {
		return nil, fmt.Errorf("dialogs: invalid tenant %q", name)
	}
	return stateOf(s.tenants, name, func() *userLists {
		s.previews[name] = make(map[int64]dialog.Preview)
		return &userLists{lists: make(map[int64]*lists), markers: make(map[string]markerSet), gaps: make(map[dialog.Gap]time.Time)}
	}), nil
}

// onUser runs f on the user's lists under s.mu.
func (s *DialogStore) onUser(name string, user int64, f func(*lists)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, err := s.of(name)
	if err != nil {
		return err
	}
	f(t.user(user))
	return nil
}

// setOrDelete keeps k in m with v while set holds, as a Redis SADD/SREM or ZADD/ZREM pair.
func setOrDelete[V any](m map[int64]V, k int64, v V, set bool) {
	if set {
		m[k] = v
	} else {
		delete(m, k)
	}
}

func (t *userLists) user(id int64) *lists {
	l, ok := t.lists[id]
	if !ok {
		l = &lists{
			unread: make(map[int64]int64), read: make(map[int64]int64), counts: make(map[int64]int64),
			muted: make(map[int64]bool), pinned: make(map[int64]int64),
		}
		t.lists[id] = l
	}
	return l
}

// Apply updates the preview and each batch of each update once, one update after another.
func (s *DialogStore) Apply(_ context.Context, name string, us ...dialog.Update) ([]dialog.Applied, error) {
	for _, u := range us {
		if u.Once == "" || u.OnceTTL < time.Millisecond {
			return nil, fmt.Errorf("apply dialogs of conversation %d: need a marker and a ttl ≥ 1ms", u.ConversationID)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t, err := s.of(name)
	if err != nil {
		return nil, err
	}
	var out []dialog.Applied
	for _, u := range us {
		out = append(out, s.applyOne(name, t, u)...)
	}
	return out, nil
}

// applyOne applies one update; the caller holds s.mu.
func (s *DialogStore) applyOne(name string, t *userLists, u dialog.Update) []dialog.Applied {
	if cur, ok := s.previews[name][u.ConversationID]; !ok || cur.Seq < u.Preview.Seq {
		s.previews[name][u.ConversationID] = u.Preview
	}
	now := s.clock()
	m, ok := t.markers[u.Once]
	if !ok || !now.Before(m.expires) {
		m = markerSet{batches: make(map[int]bool)}
	}
	var out []dialog.Applied
	for _, b := range u.Batches {
		first := !m.batches[b.Index]
		if first {
			m.batches[b.Index] = true
			m.expires = now.Add(u.OnceTTL)
		}
		a := dialog.Applied{First: first}
		for _, user := range b.Users {
			l := t.user(user)
			muted := l.muted[u.ConversationID]
			if muted && user != u.Sender {
				a.Muted = append(a.Muted, user)
			}
			if first {
				l.apply(u.ConversationID, u.Score, user == u.Sender || u.Silent, muted)
			}
		}
		out = append(out, a)
	}
	t.markers[u.Once] = m
	return out
}

// apply is one recipient's change for one message (see ports.DialogStore.Apply); keep re-scores
// the dialog where it is, counting nothing (the sender, a silent update).
func (l *lists) apply(conv, score int64, keep, muted bool) {
	_, inUnread := l.unread[conv]
	score = max(score, l.unread[conv], l.read[conv])
	switch {
	case keep && inUnread:
		l.unread[conv] = score
	case keep:
		l.read[conv] = score
	case muted:
		delete(l.unread, conv)
		l.read[conv] = score
	default:
		delete(l.read, conv)
		l.unread[conv] = score
		l.counts[conv]++
	}
}

// AppliedSeq is the seq of the conversation's preview, 0 without one.
func (s *DialogStore) AppliedSeq(_ context.Context, name string, conversationID int64) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.of(name); err != nil {
		return 0, err
	}
	return s.previews[name][conversationID].Seq, nil
}

// MarkRead clears the count and moves the dialog to read with its score.
func (s *DialogStore) MarkRead(_ context.Context, name string, user, conversationID int64) error {
	return s.onUser(name, user, func(l *lists) {
		delete(l.counts, conversationID)
		if score, ok := l.unread[conversationID]; ok {
			delete(l.unread, conversationID)
			l.read[conversationID] = max(score, l.read[conversationID])
		}
	})
}

// Changed merges both lists above after, ascending by score then conversation id.
func (s *DialogStore) Changed(_ context.Context, name string, user, after int64, limit int) ([]dialog.Entry, error) {
	var out []dialog.Entry
	err := s.onUser(name, user, func(l *lists) {
		for _, scores := range []map[int64]int64{l.unread, l.read} {
			for conv, score := range scores {
				if score <= after {
					continue
				}
				_, pinned := l.pinned[conv]
				out = append(out, dialog.Entry{
					ConversationID: conv, Score: score, Unread: l.counts[conv], Muted: l.muted[conv], Pinned: pinned,
					Preview: s.previews[name][conv],
				})
			}
		}
	})
	slices.SortFunc(out, func(a, b dialog.Entry) int {
		return cmp.Or(cmp.Compare(a.Score, b.Score), cmp.Compare(a.ConversationID, b.ConversationID))
	})
	return out[:min(len(out), max(limit, 0))], err
}

// UnreadTotal sums the user's counts.
func (s *DialogStore) UnreadTotal(_ context.Context, name string, user int64) (int64, error) {
	var sum int64
	err := s.onUser(name, user, func(l *lists) {
		for _, n := range l.counts {
			sum += n
		}
	})
	return sum, err
}

// Built reports the user's marker.
func (s *DialogStore) Built(_ context.Context, name string, user int64) (bool, error) {
	var built bool
	err := s.onUser(name, user, func(l *lists) { built = l.built })
	return built, err
}

// Rebuild merges (or, with replace, first drops) the user's lists from MySQL state.
func (s *DialogStore) Rebuild(_ context.Context, name string, user int64, states []dialog.State, replace bool) error {
	return s.onUser(name, user, func(l *lists) { s.rebuild(name, l, states, replace) })
}

// rebuild is Rebuild of one user's lists; the caller holds s.mu.
func (s *DialogStore) rebuild(name string, l *lists, states []dialog.State, replace bool) {
	if replace {
		clear(l.unread)
		clear(l.read)
		clear(l.counts)
		clear(l.muted)
	}
	for _, st := range states {
		conv, score := st.ConversationID, dialog.ScoreOf(st.LastMsgAt)
		setOrDelete(l.muted, conv, true, st.Muted)
		if cur, ok := l.unread[conv]; ok {
			l.unread[conv] = max(cur, score)
		} else if cur, ok := l.read[conv]; ok {
			l.read[conv] = max(cur, score)
		} else if n := st.Unread(); n > 0 {
			l.unread[conv] = score
			if _, counted := l.counts[conv]; !counted {
				l.counts[conv] = n
			}
		} else {
			l.read[conv] = score
		}
		if _, ok := s.previews[name][conv]; !ok {
			s.previews[name][conv] = st.Preview()
		}
	}
	l.built = true
}

// SetMuted adds to or removes from the muted set.
func (s *DialogStore) SetMuted(_ context.Context, name string, user, conversationID int64, muted bool) error {
	return s.onUser(name, user, func(l *lists) { setOrDelete(l.muted, conversationID, true, muted) })
}

// SetPinned pins at pinnedAt or, for 0, unpins.
func (s *DialogStore) SetPinned(_ context.Context, name string, user, conversationID, pinnedAt int64) error {
	return s.onUser(name, user, func(l *lists) { setOrDelete(l.pinned, conversationID, pinnedAt, pinnedAt > 0) })
}

// Forget drops a tenant's lists and previews, as a Redis loss would (tests of rebuilds).
func (s *DialogStore) Forget(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.tenants, name)
	delete(s.previews, name)
}

// onTenant runs f on the tenant's lists under s.mu.
func (s *DialogStore) onTenant(name string, f func(*userLists)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, err := s.of(name)
	if err != nil {
		return err
	}
	f(t)
	return nil
}

// Note records the gaps, keeping the first time of one recorded already.
func (s *DialogStore) Note(_ context.Context, name string, at time.Time, gaps ...dialog.Gap) error {
	return s.onTenant(name, func(t *userLists) {
		for _, g := range gaps {
			g.Noted = time.Time{}
			if _, ok := t.gaps[g]; !ok {
				t.gaps[g] = at
			}
		}
	})
}

// Due returns the gaps noted by notedBy, oldest first.
func (s *DialogStore) Due(_ context.Context, name string, notedBy time.Time, limit int) ([]dialog.Gap, error) {
	var out []dialog.Gap
	err := s.onTenant(name, func(t *userLists) {
		for g, at := range t.gaps {
			if !at.After(notedBy) {
				g.Noted = at
				out = append(out, g)
			}
		}
	})
	slices.SortFunc(out, func(a, b dialog.Gap) int {
		return cmp.Or(a.Noted.Compare(b.Noted), cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.From, b.From), cmp.Compare(a.To, b.To))
	})
	return out[:min(len(out), max(limit, 0))], err
}

// Close removes the gaps.
func (s *DialogStore) Close(_ context.Context, name string, gaps ...dialog.Gap) error {
	return s.onTenant(name, func(t *userLists) {
		for _, g := range gaps {
			g.Noted = time.Time{}
			delete(t.gaps, g)
		}
	})
}
