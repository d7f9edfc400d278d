package memory

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/imdhq/imd/core/domain/presence"
	"github.com/imdhq/imd/core/domain/tenant"
	"github.com/imdhq/imd/ports"
)

// Nodes is an in-memory ports.NodeLeases, ports.Presence and ports.NodeChannel, with the
// Redis adapter's rules: leases against one clock, a claim answers what it replaced, a release
// only removes its own entry, a channel refuses more once its backlog reached the limit.
type Nodes struct {
	clock func() time.Time
	mu    sync.Mutex
	ts    map[string]*nodesOf
	sent  chan struct{} // closed and replaced on every send, to wake waiting Receives
}

type nodesOf struct {
	leases   map[string]time.Time                // node → lease end
	presence map[int64]map[uint64]presence.Entry // user → device → entry
	channels map[string]*nodeChannel
	whole    bool      // the wholeness mark (ports.NodeLeases.Mend)
	healEnd  time.Time // zero: no heal under way
}

type nodeChannel struct {
	next    int64
	entries []ports.NodeMessage
}

var (
	_ ports.NodeLeases  = (*Nodes)(nil)
	_ ports.Presence    = (*Nodes)(nil)
	_ ports.NodeChannel = (*Nodes)(nil)
)

// NewNodes returns an empty registry on clock.
func NewNodes(clock func() time.Time) *Nodes {
	return &Nodes{clock: clock, ts: map[string]*nodesOf{}, sent: make(chan struct{})}
}

// of returns a tenant's state; the caller holds mu.
func (n *Nodes) of(name, node string) (*nodesOf, error) {
	if !tenant.Valid(name) || !presence.ValidNode(node) {
		return nil, fmt.Errorf("invalid tenant %q or node %q", name, node)
	}
	return stateOf(n.ts, name, newNodesOf), nil
}

func newNodesOf() *nodesOf {
	return &nodesOf{leases: map[string]time.Time{}, presence: map[int64]map[uint64]presence.Entry{}, channels: map[string]*nodeChannel{}}
}

// Renew implements ports.NodeLeases.
func (n *Nodes) Renew(_ context.Context, name, node string, ttl time.Duration) (live, expired []string, lapsed bool, err error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	s, err := n.of(name, node)
	if err != nil {
		return nil, nil, false, fmt.Errorf("renew node lease: %w", err)
	}
	now := n.clock()
	until, ok := s.leases[node]
	lapsed = !ok || until.Before(now)
	s.leases[node] = now.Add(ttl)
	for _, m := range slices.Sorted(maps.Keys(s.leases)) {
		if s.leases[m].Before(now) {
			expired = append(expired, m)
		} else {
			live = append(live, m)
		}
	}
	return live, expired, lapsed, nil
}

// Mend implements ports.NodeLeases with the Redis adapter's rules, on the registry's clock.
func (n *Nodes) Mend(_ context.Context, name string, ttl time.Duration, known, owes bool) (bool, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !tenant.Valid(name) {
		return false, fmt.Errorf("mend presence registry: invalid tenant %q", name)
	}
	s := stateOf(n.ts, name, newNodesOf)
	now := n.clock()
	switch {
	case owes:
		s.whole = false
		if end := now.Add(ttl); end.After(s.healEnd) {
			s.healEnd = end
		}
	case s.whole:
	case s.healEnd.IsZero() && !known:
		s.whole = true
	case s.healEnd.IsZero():
		s.healEnd = now.Add(ttl)
	case !now.Before(s.healEnd):
		s.whole, s.healEnd = true, time.Time{}
	}
	return s.whole, nil
}

// Retire implements ports.NodeLeases.
func (n *Nodes) Retire(_ context.Context, name, node string) ([]int64, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	s, err := n.of(name, node)
	if err != nil {
		return nil, fmt.Errorf("retire node: %w", err)
	}
	var users []int64
	for user, devices := range s.presence {
		before := len(devices)
		maps.DeleteFunc(devices, func(_ uint64, e presence.Entry) bool { return e.Node == node })
		if len(devices) < before {
			users = append(users, user)
		}
		if len(devices) == 0 {
			delete(s.presence, user)
		}
	}
	delete(s.channels, node)
	delete(s.leases, node)
	slices.Sort(users)
	return users, nil
}

// Claim implements ports.Presence.
func (n *Nodes) Claim(_ context.Context, name string, e presence.Entry) (presence.Entry, bool, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	s, err := n.of(name, e.Node)
	if err != nil {
		return presence.Entry{}, false, fmt.Errorf("claim presence: %w", err)
	}
	if s.presence[e.User] == nil {
		s.presence[e.User] = map[uint64]presence.Entry{}
	}
	prev, found := s.presence[e.User][e.Device]
	s.presence[e.User][e.Device] = e
	return prev, found, nil
}

// Release implements ports.Presence.
func (n *Nodes) Release(_ context.Context, name string, e presence.Entry) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	s, err := n.of(name, e.Node)
	if err != nil {
		return fmt.Errorf("release presence: %w", err)
	}
	if s.presence[e.User][e.Device] == e {
		delete(s.presence[e.User], e.Device)
	}
	return nil
}

// Restore implements ports.Presence.
func (n *Nodes) Restore(_ context.Context, name string, entries []presence.Entry) (int, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	restored := 0
	for _, e := range entries {
		s, err := n.of(name, e.Node)
		if err != nil {
			return restored, fmt.Errorf("restore presence: %w", err)
		}
		if s.presence[e.User] == nil {
			s.presence[e.User] = map[uint64]presence.Entry{}
		}
		if _, found := s.presence[e.User][e.Device]; !found {
			s.presence[e.User][e.Device] = e
			restored++
		}
	}
	return restored, nil
}

// Entries implements ports.Presence.
func (n *Nodes) Entries(_ context.Context, name, node string) ([]presence.Entry, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	s, err := n.of(name, node)
	if err != nil {
		return nil, fmt.Errorf("entries of node: %w", err)
	}
	var out []presence.Entry
	for _, user := range slices.Sorted(maps.Keys(s.presence)) {
		for _, device := range slices.Sorted(maps.Keys(s.presence[user])) {
			if e := s.presence[user][device]; e.Node == node {
				out = append(out, e)
			}
		}
	}
	return out, nil
}

// Lookup implements ports.Presence.
func (n *Nodes) Lookup(ctx context.Context, name string, users []int64) ([]presence.Entry, error) {
	out, _, err := n.LookupWhole(ctx, name, users)
	return out, err
}

// LookupWhole implements ports.Presence.
func (n *Nodes) LookupWhole(_ context.Context, name string, users []int64) ([]presence.Entry, bool, error) {
	if !tenant.Valid(name) {
		return nil, false, fmt.Errorf("look presence up: invalid tenant %q", name)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	s := n.ts[name]
	if s == nil {
		return nil, false, nil
	}
	var out []presence.Entry
	for _, u := range users {
		for _, d := range slices.Sorted(maps.Keys(s.presence[u])) {
			out = append(out, s.presence[u][d])
		}
	}
	return out, s.whole, nil
}

// Send implements ports.NodeChannel.
func (n *Nodes) Send(_ context.Context, name, node string, limit int, bodies ...[]byte) (bool, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	s, err := n.of(name, node)
	if err != nil {
		return false, fmt.Errorf("send to node: %w", err)
	}
	ch := s.channels[node]
	if ch == nil {
		ch = &nodeChannel{}
		s.channels[node] = ch
	}
	if len(ch.entries) >= max(limit, 1) {
		return false, nil
	}
	for _, b := range bodies {
		ch.next++
		ch.entries = append(ch.entries, ports.NodeMessage{ID: strconv.FormatInt(ch.next, 10), Body: slices.Clone(b)})
	}
	close(n.sent)
	n.sent = make(chan struct{})
	return true, nil
}

// Receive implements ports.NodeChannel.
func (n *Nodes) Receive(ctx context.Context, name, node, after string, count int, wait time.Duration) ([]ports.NodeMessage, error) {
	cursor := int64(0)
	if after != "" {
		var err error
		if cursor, err = strconv.ParseInt(after, 10, 64); err != nil {
			return nil, fmt.Errorf("receive for node %s: bad cursor %q", node, after)
		}
	}
	deadline := time.NewTimer(max(wait, time.Millisecond))
	defer deadline.Stop()
	for {
		n.mu.Lock()
		s, err := n.of(name, node)
		if err != nil {
			n.mu.Unlock()
			return nil, fmt.Errorf("receive for node: %w", err)
		}
		var out []ports.NodeMessage
		if ch := s.channels[node]; ch != nil {
			for _, m := range ch.entries {
				if id, _ := strconv.ParseInt(m.ID, 10, 64); id > cursor && len(out) < max(count, 1) {
					out = append(out, m)
				}
			}
		}
		sent := n.sent
		n.mu.Unlock()
		if len(out) > 0 {
			return out, nil
		}
		select {
		case <-sent:
		case <-deadline.C:
			return nil, nil
		case <-ctx.Done():
			return nil, fmt.Errorf("receive for node %s: %w", node, ctx.Err())
		}
	}
}

// Remove implements ports.NodeChannel.
func (n *Nodes) Remove(_ context.Context, name, node string, ids ...string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	s, err := n.of(name, node)
	if err != nil {
		return fmt.Errorf("remove from node channel: %w", err)
	}
	if ch := s.channels[node]; ch != nil {
		ch.entries = slices.DeleteFunc(ch.entries, func(m ports.NodeMessage) bool { return slices.Contains(ids, m.ID) })
	}
	return nil
}

var _ ports.NodeInspector = (*Nodes)(nil)

// LiveNodes implements ports.NodeInspector.
func (n *Nodes) LiveNodes(_ context.Context, name string) ([]ports.NodeStatus, error) {
	if !tenant.Valid(name) {
		return nil, fmt.Errorf("list nodes: invalid tenant %q", name)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	s := n.ts[name]
	if s == nil {
		return nil, nil
	}
	now := n.clock()
	var out []ports.NodeStatus
	for _, node := range slices.Sorted(maps.Keys(s.leases)) {
		if s.leases[node].Before(now) {
			continue
		}
		st := ports.NodeStatus{Node: node, LeaseUntil: s.leases[node]}
		for _, devices := range s.presence {
			for _, e := range devices {
				if e.Node == node {
					st.Devices++
				}
			}
		}
		if ch := s.channels[node]; ch != nil {
			st.Backlog = int64(len(ch.entries))
		}
		out = append(out, st)
	}
	return out, nil
}
