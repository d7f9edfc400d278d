package memory

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/ports"
)

// MessageEditor is the in-memory message editor. It changes the month tables of a ShardStore
// and keeps the revision rows next to them, so a MessageStore over the same ShardStore sees
// every change.
type MessageEditor struct {
	shards *ShardStore
}

// Revision is one stored revision row, with the month and identity of its message and the
// content before the change, as im_message_revisions keeps it.
type Revision struct {
	Month      month.Month
	Topic      string
	Seq        int64
	MsgID      int64
	OldContent []byte
	message.Revision
}

var _ ports.MessageEditor = (*MessageEditor)(nil)

// NewMessageEditor returns an editor over the tenant data of shards.
func NewMessageEditor(shards *ShardStore) *MessageEditor { return &MessageEditor{shards: shards} }

// Modify runs change under the store's lock, which stands in for the row lock.
func (e *MessageEditor) Modify(_ context.Context, tenant string, m month.Month, topicName string, seq int64,
	change func(message.Message) (message.Revision, error)) (message.Message, error) {
	e.shards.mu.Lock()
	defer e.shards.mu.Unlock()
	d := e.shards.db(tenant)
	table, err := d.table(m)
	if err != nil {
		return message.Message{}, fmt.Errorf("modify %s seq %d: %w", topicName, seq, err)
	}
	key := topicSeqKey{topicName, seq}
	stored, ok := table[key]
	if !ok {
		return message.Message{}, fmt.Errorf("modify %s seq %d in %s: %w", topicName, seq, m, message.ErrNotFound)
	}
	current := cloneMessage(stored)
	rev, err := change(cloneMessage(stored))
	if errors.Is(err, message.ErrUnchanged) {
		return current, nil
	}
	if err != nil {
		return message.Message{}, err
	}
	rev.At = rev.At.UTC().Truncate(time.Millisecond)
	next := current
	next.Status, next.Content, next.Version = rev.Message.Status, slices.Clone(rev.Message.Content), rev.Message.Version
	next.EditedAt = time.Time{}
	if !rev.Message.EditedAt.IsZero() {
		next.EditedAt = rev.Message.EditedAt.UTC().Truncate(time.Millisecond)
	}
	table[key] = next
	rev.Message = cloneMessage(next)
	d.revisions = append(d.revisions, Revision{
		Month: m, Topic: topicName, Seq: seq, MsgID: next.MsgID, OldContent: slices.Clone(current.Content), Revision: rev,
	})
	return cloneMessage(next), nil
}

// Revisions lists the revision rows of a topic's seq in the order they were written, for tests.
func (e *MessageEditor) Revisions(tenant, topicName string, seq int64) []Revision {
	e.shards.mu.Lock()
	defer e.shards.mu.Unlock()
	var out []Revision
	for _, r := range e.shards.db(tenant).revisions {
		if r.Topic == topicName && r.Seq == seq {
			r.OldContent = slices.Clone(r.OldContent)
			r.Message = cloneMessage(r.Message)
			out = append(out, r)
		}
	}
	return out
}
