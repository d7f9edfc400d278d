package ports

import (
	"context"

	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/month"
)

// MessageEditor changes stored messages in place: recall, edit, delete for everyone (seed 000 §7).
type MessageEditor interface {
	// Modify locks message (topic, seq) in month m's table (SELECT … FOR UPDATE), hands it to
	// change, and stores the result together with one revision row carrying the month, in one
	// transaction. Only status, content, version and edited_at of Revision.Message are stored;
	// the rest of the row never changes. change runs under the row lock, so it must be quick and
	// must not call a store. An error from change rolls back and is returned as is;
	// message.ErrUnchanged writes nothing and returns the message as stored. A message absent
	// from m is message.ErrNotFound.
	Modify(ctx context.Context, tenant string, m month.Month, topic string, seq int64,
		change func(current message.Message) (message.Revision, error)) (message.Message, error)
}

// DeleteLog keeps the seq ranges users deleted for themselves (im_dellog). MessageStore.Page
// hides them from that viewer, in every month.
type DeleteLog interface {
	// HideRange hides seqs [low, hi) of topic from user.
	HideRange(ctx context.Context, tenant, topic string, user, low, hi int64) error
}

// GroupOwners tells who owns a group (t_groups.owner_id), for what only the owner may do.
type GroupOwners interface {
	// GroupOwner fails with social.ErrNotFound for an unknown group.
	GroupOwner(ctx context.Context, tenant string, groupID int64) (int64, error)
}
