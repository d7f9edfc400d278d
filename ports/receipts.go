package ports

import (
	"context"

	"github.com/imdhq/imd/core/domain/dialog"
)

// ReadReceipts counts a message's readers from the members' read watermarks (issue 31): one
// range over an index of (conversation, watermark), never a row per message per member.
type ReadReceipts interface {
	// ReadBy answers who read message seq, sent by sender, of the conversation: the members
	// other than sender whose watermark is at least seq and who do not hide receipts (their
	// number and the first limit of their ids, ascending; none when limit is 0), and the
	// number of members other than sender.
	ReadBy(ctx context.Context, tenant string, conversationID, seq, sender int64, limit int) (dialog.Readers, error)
	// RaiseDelivered moves user's delivered watermark of the conversation up to seq: a device
	// of user acknowledged that message. Never lowered; a member it does not hold is a no-op.
	RaiseDelivered(ctx context.Context, tenant string, conversationID, user, seq int64) error
	// DeliveredTo is how far user's devices got the conversation's messages: the delivered
	// watermark, or the read one where that is further (what was read was delivered).
	DeliveredTo(ctx context.Context, tenant string, conversationID, user int64) (int64, error)
	// DeliveredToUsers is DeliveredTo for several users of one conversation in one read, by
	// user; a user who is no member is left out (none: 0).
	DeliveredToUsers(ctx context.Context, tenant string, conversationID int64, users []int64) (map[int64]int64, error)
}
