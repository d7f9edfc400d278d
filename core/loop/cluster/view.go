package cluster

import (
	"sync"
)

// View is what this node knows of the live nodes of each tenant, as of the Keeper's last
// pass. It is read on every push, so reads take a read lock only.
type View struct {
	self string
	mu   sync.RWMutex
	live map[string]map[string]bool // tenant → live instances, self included
}

// NewView returns a view in which this node knows of no other.
func NewView(self string) *View { return &View{self: self, live: make(map[string]map[string]bool)} }

// Self is this node's instance name.
func (v *View) Self() string { return v.self }

func (v *View) set(tenant string, live []string) {
	m := make(map[string]bool, len(live))
	for _, n := range live {
		m[n] = true
	}
	v.mu.Lock()
	v.live[tenant] = m
	v.mu.Unlock()
}

// Alone reports whether no other node of the tenant is known to be alive: then every device
// connected anywhere is connected here.
func (v *View) Alone(tenant string) bool {
	v.mu.RLock()
	defer v.mu.RUnlock()
	for n := range v.live[tenant] {
		if n != v.self {
			return false
		}
	}
	return true
}

// Live reports whether node is alive in the tenant (a presence entry of a dead node is stale).
func (v *View) Live(tenant, node string) bool {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return v.live[tenant][node]
}

// nodes lists the live nodes of the tenant, this one always among them, even before the
// Keeper's first pass.
func (v *View) nodes(tenant string) []string {
	v.mu.RLock()
	defer v.mu.RUnlock()
	out := []string{v.self}
	for n := range v.live[tenant] {
		if n != v.self {
			out = append(out, n)
		}
	}
	return out
}
