package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/imdhq/imd/adapters/mysql/sqlcdb"
	"github.com/imdhq/imd/core/domain/dialog"
	"github.com/imdhq/imd/ports"
)

// Receipts is ports.ReadReceipts over t_conversation_members and t_user_settings (0012): the
// readers are a range of idx_conversation_read, hiders left out by their settings row.
type Receipts struct {
	cluster *Cluster
	// store's marker writes the delivered marks, in the tenant's group-commit transactions
	store *MessageStore
}

var _ ports.ReadReceipts = (*Receipts)(nil)

// NewReceipts returns the read receipts of the provisioned tenants of c, whose delivered marks
// store writes.
func NewReceipts(c *Cluster, store *MessageStore) *Receipts {
	return &Receipts{cluster: c, store: store}
}

// ReadBy implements ports.ReadReceipts: two counts and, when limit > 0, one page of ids.
func (r *Receipts) ReadBy(ctx context.Context, tenant string, conversationID, seq, sender int64, limit int) (dialog.Readers, error) {
	t, err := r.cluster.tenant(tenant)
	if err != nil {
		return dialog.Readers{}, err
	}
	read, err := t.q.CountReaders(ctx, sqlcdb.CountReadersParams{ConversationID: conversationID, LastReadSeq: seq, UserID: sender})
	if err != nil {
		return dialog.Readers{}, fmt.Errorf("readers of seq %d of conversation %d of %s: %w", seq, conversationID, tenant, err)
	}
	of, err := t.q.CountMembers(ctx, sqlcdb.CountMembersParams{ConversationID: conversationID, UserID: sender})
	if err != nil {
		return dialog.Readers{}, fmt.Errorf("members of conversation %d of %s: %w", conversationID, tenant, err)
	}
	out := dialog.Readers{Read: int(read), Of: int(of), Users: []int64{}}
	if limit <= 0 || read == 0 {
		return out, nil
	}
	out.Users, err = t.q.ListReaders(ctx, sqlcdb.ListReadersParams{ConversationID: conversationID, LastReadSeq: seq, UserID: sender, Limit: int32(limit)})
	if err != nil {
		return dialog.Readers{}, fmt.Errorf("reader ids of seq %d of conversation %d of %s: %w", seq, conversationID, tenant, err)
	}
	return out, nil
}

// RaiseDelivered implements ports.ReadReceipts: the mark goes in the tenant's next
// group-commit transaction, or with the marks that meet while none is coming (marker), and
// returns once that committed.
func (r *Receipts) RaiseDelivered(ctx context.Context, tenant string, conversationID, user, seq int64) error {
	if err := r.store.raiseDelivered(ctx, tenant, deliveredMark{conversationID: conversationID, user: user, seq: seq}); err != nil {
		return fmt.Errorf("delivered mark of user %d in conversation %d of %s: %w", user, conversationID, tenant, err)
	}
	return nil
}

// DeliveredTo implements ports.ReadReceipts; a user who is no member has 0.
func (r *Receipts) DeliveredTo(ctx context.Context, tenant string, conversationID, user int64) (int64, error) {
	t, err := r.cluster.tenant(tenant)
	if err != nil {
		return 0, err
	}
	seq, err := t.q.DeliveredSeq(ctx, sqlcdb.DeliveredSeqParams{ConversationID: conversationID, UserID: user})
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return 0, nil
	case err != nil:
		return 0, fmt.Errorf("delivered mark of user %d in conversation %d of %s: %w", user, conversationID, tenant, err)
	}
	return seq, nil
}

// DeliveredToUsers implements ports.ReadReceipts: one range of the unique key.
func (r *Receipts) DeliveredToUsers(ctx context.Context, tenant string, conversationID int64, users []int64) (map[int64]int64, error) {
	out := make(map[int64]int64, len(users))
	if len(users) == 0 {
		return out, nil
	}
	t, err := r.cluster.tenant(tenant)
	if err != nil {
		return nil, err
	}
	rows, err := t.q.DeliveredSeqs(ctx, sqlcdb.DeliveredSeqsParams{ConversationID: conversationID, UserIds: users})
	if err != nil {
		return nil, fmt.Errorf("delivered marks of %d users in conversation %d of %s: %w", len(users), conversationID, tenant, err)
	}
	for _, row := range rows {
		out[row.UserID] = row.Delivered
	}
	return out, nil
}
