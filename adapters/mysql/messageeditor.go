package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/imdhq/imd/adapters/mysql/sqlcdb"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/ports"
)

// MessageEditor implements ports.MessageEditor: a change of one message runs in one
// transaction on its month table and im_message_revisions (seed 000 §7).
type MessageEditor struct {
	cluster *Cluster
}

var _ ports.MessageEditor = (*MessageEditor)(nil)

// NewMessageEditor returns the editor over the provisioned tenants of c.
func NewMessageEditor(c *Cluster) *MessageEditor { return &MessageEditor{cluster: c} }

// Modify locks the row, lets change decide, then writes the row and its revision.
func (e *MessageEditor) Modify(ctx context.Context, tenant string, m month.Month, topicName string, seq int64,
	change func(message.Message) (message.Revision, error)) (message.Message, error) {
	t, err := e.cluster.tenant(tenant)
	if err != nil {
		return message.Message{}, err
	}
	// An unregistered month fails here, before a connection is taken for the transaction.
	if _, err := t.months.table(ctx, m); err != nil {
		return message.Message{}, fmt.Errorf("modify %s seq %d: %w", topicName, seq, err)
	}
	// READ COMMITTED like the group-commit writer: the lock is on this row only, no gaps.
	tx, err := t.db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	if err != nil {
		return message.Message{}, fmt.Errorf("modify %s seq %d: begin: %w", topicName, seq, err)
	}
	defer tx.Rollback() // no-op after Commit
	table, err := t.months.on(ctx, tx, m)
	if err != nil {
		return message.Message{}, fmt.Errorf("modify %s seq %d: %w", topicName, seq, err)
	}
	mq := sqlcdb.New(table)
	row, err := mq.LockMessage(ctx, sqlcdb.LockMessageParams{Topic: topicName, Seqid: seq})
	if errors.Is(err, sql.ErrNoRows) {
		return message.Message{}, fmt.Errorf("modify %s seq %d in %s: %w", topicName, seq, m, message.ErrNotFound)
	}
	if err != nil {
		return message.Message{}, fmt.Errorf("modify %s seq %d in %s: lock: %w", topicName, seq, m, err)
	}
	current, err := fromRow(row, m)
	if err != nil {
		return message.Message{}, err
	}
	rev, err := change(current)
	if errors.Is(err, message.ErrUnchanged) {
		return current, nil
	}
	if err != nil {
		return message.Message{}, err
	}
	rev.At = rev.At.UTC().Truncate(time.Millisecond)
	next := applyRevision(current, rev)
	if err := mq.UpdateMessageState(ctx, stateParams(row, next, rev)); err != nil {
		return message.Message{}, fmt.Errorf("modify %s seq %d in %s: update: %w", topicName, seq, m, err)
	}
	if err := sqlcdb.New(tx).InsertRevision(ctx, revisionParams(current, next, rev)); err != nil {
		return message.Message{}, fmt.Errorf("modify %s seq %d in %s: revision: %w", topicName, seq, m, err)
	}
	if err := tx.Commit(); err != nil {
		return message.Message{}, fmt.Errorf("modify %s seq %d in %s: commit: %w", topicName, seq, m, err)
	}
	return next, nil
}

// applyRevision takes the mutable fields of the revised message and keeps the rest of current.
func applyRevision(current message.Message, rev message.Revision) message.Message {
	next := current
	next.Status = rev.Message.Status
	next.Content = rev.Message.Content
	next.Version = rev.Message.Version
	next.EditedAt = time.Time{}
	if !rev.Message.EditedAt.IsZero() {
		next.EditedAt = rev.Message.EditedAt.UTC().Truncate(time.Millisecond)
	}
	return next
}

// stateParams is the update of row to next; the recall and delete times stay once set.
func stateParams(row sqlcdb.ImGroupMessagesTpl, next message.Message, rev message.Revision) sqlcdb.UpdateMessageStateParams {
	p := sqlcdb.UpdateMessageStateParams{
		Status:      string(next.Status),
		Content:     sql.NullString{String: string(next.Content), Valid: len(next.Content) > 0},
		ContentSize: int32(len(next.Content)),
		Version:     int32(next.Version),
		EditedAt:    sql.NullTime{Time: next.EditedAt, Valid: !next.EditedAt.IsZero()},
		RecalledAt:  row.RecalledAt,
		RecalledBy:  row.RecalledBy,
		DeletedAt:   row.DeletedAt,
		UpdatedAt:   rev.At,
		Topic:       next.Topic,
		Seqid:       next.Seq,
	}
	switch rev.Action {
	case message.ActionRecall:
		p.RecalledAt = sql.NullTime{Time: rev.At, Valid: true}
		p.RecalledBy = sql.NullInt64{Int64: rev.Editor, Valid: true}
	case message.ActionDelete:
		p.DeletedAt = sql.NullTime{Time: rev.At, Valid: true}
	}
	return p
}

func revisionParams(current, next message.Message, rev message.Revision) sqlcdb.InsertRevisionParams {
	return sqlcdb.InsertRevisionParams{
		Topic: next.Topic, ShardMonth: next.Month.String(), Seqid: next.Seq, MessageID: next.MsgID,
		Version: int32(next.Version), Editor: rev.Editor, Action: string(rev.Action),
		OldContent: sql.NullString{String: string(current.Content), Valid: len(current.Content) > 0},
		NewContent: sql.NullString{String: string(next.Content), Valid: len(next.Content) > 0},
		CreatedAt:  rev.At,
	}
}
