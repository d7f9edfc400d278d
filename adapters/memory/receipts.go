package memory

import (
	"context"
	"slices"

	"github.com/imdhq/imd/core/domain/dialog"
	"github.com/imdhq/imd/ports"
)

// Receipts is the in-memory ports.ReadReceipts over a ReadStore's watermarks, a Directory's
// members and a Presence's settings, with the MySQL adapter's rules.
type Receipts struct {
	dir      *Directory
	reads    *ReadStore
	settings *Presence
}

var _ ports.ReadReceipts = (*Receipts)(nil)

// NewReceipts returns read receipts over those stores.
func NewReceipts(dir *Directory, reads *ReadStore, settings *Presence) *Receipts {
	return &Receipts{dir: dir, reads: reads, settings: settings}
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
