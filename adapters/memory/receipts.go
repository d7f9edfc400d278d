package memory

import (
	"context"
	"slices"
	"sync"

	"github.com/imdhq/imd/core/domain/dialog"
	"github.com/imdhq/imd/ports"
)

// Receipts is the in-memory ports.ReadReceipts over a ReadStore's watermarks, a Directory's
// members and a Presence's settings, with the MySQL adapter's rules.
type Receipts struct {
	dir      *Directory
	reads    *ReadStore
	settings *Presence

	mu        sync.Mutex
	delivered map[memberKey]int64
}

var _ ports.ReadReceipts = (*Receipts)(nil)

// NewReceipts returns read receipts over those stores.
func NewReceipts(dir *Directory, reads *ReadStore, settings *Presence) *Receipts {
	return &Receipts{dir: dir, reads: reads, settings: settings, delivered: map[memberKey]int64{}}
}

// ReadBy implements ports.ReadReceipts.
func (r *Receipts) ReadBy(ctx context.Context, tenant string, conversationID, seq, sender int64, limit int) (dialog.Readers, error) {
	r.dir.mu.Lock()
	var members []int64
	for u, in := range r.dir.graph(tenant).members[conversationID] {
		if in && u != sender {
			members = append(members, u)
		}
	}
	r.dir.mu.Unlock()
	slices.Sort(members)
	out := dialog.Readers{Of: len(members), Users: []int64{}}
	for _, u := range members {
		r.reads.mu.Lock()
		mark := r.reads.marks[memberKey{tenant, conversationID, u}].seq
		r.reads.mu.Unlock()
		if mark < seq {
			continue
		}
		if s, err := r.settings.Settings(ctx, tenant, u); err != nil || s.HideReceipts {
			continue
		}
		out.Read++
		if len(out.Users) < limit {
			out.Users = append(out.Users, u)
		}
	}
	return out, nil
}

// member tells whether user is a member of the conversation.
func (r *Receipts) member(tenant string, conversationID, user int64) bool {
	r.dir.mu.Lock()
	defer r.dir.mu.Unlock()
	return r.dir.graph(tenant).members[conversationID][user]
}

// RaiseDelivered implements ports.ReadReceipts.
func (r *Receipts) RaiseDelivered(_ context.Context, tenant string, conversationID, user, seq int64) error {
	if !r.member(tenant, conversationID, user) {
		return nil
	}
	k := memberKey{tenant, conversationID, user}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.delivered[k] = max(r.delivered[k], seq)
	return nil
}

// DeliveredTo implements ports.ReadReceipts.
func (r *Receipts) DeliveredTo(_ context.Context, tenant string, conversationID, user int64) (int64, error) {
	if !r.member(tenant, conversationID, user) {
		return 0, nil
	}
	k := memberKey{tenant, conversationID, user}
	r.reads.mu.Lock()
	read := r.reads.marks[k].seq
	r.reads.mu.Unlock()
	r.mu.Lock()
	defer r.mu.Unlock()
	return max(r.delivered[k], read), nil
}

// DeliveredToUsers implements ports.ReadReceipts.
func (r *Receipts) DeliveredToUsers(ctx context.Context, tenant string, conversationID int64, users []int64) (map[int64]int64, error) {
	out := make(map[int64]int64, len(users))
	for _, u := range users {
		if r.member(tenant, conversationID, u) {
			out[u], _ = r.DeliveredTo(ctx, tenant, conversationID, u)
		}
	}
	return out, nil
}
