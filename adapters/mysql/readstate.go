package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/imdhq/imd/adapters/mysql/sqlcdb"
	"github.com/imdhq/imd/core/domain/dialog"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/social"
	"github.com/imdhq/imd/ports"
)

// ReadStore implements ports.ReadStore over t_conversation_members and t_conversations.
type ReadStore struct {
	cluster *Cluster
}

var _ ports.ReadStore = (*ReadStore)(nil)

// NewReadStore returns the read-state store over the provisioned tenants of c.
func NewReadStore(c *Cluster) *ReadStore { return &ReadStore{cluster: c} }

// Advance locks the member row, and raises the watermark only when seq is past it, so
// concurrent reads from several devices settle on the highest one.
func (s *ReadStore) Advance(ctx context.Context, tenant string, user, conversationID, seq, msgID int64) (dialog.Watermark, bool, error) {
	t, err := s.cluster.tenant(tenant)
	if err != nil {
		return dialog.Watermark{}, false, err
	}
	w := dialog.Watermark{ConversationID: conversationID}
	advanced := false
	err = inTx(ctx, t.db, func(q *sqlcdb.Queries) error {
		cur, err := q.LockReadWatermark(ctx, sqlcdb.LockReadWatermarkParams{ConversationID: conversationID, UserID: user})
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("member %d of conversation %d: %w", user, conversationID, social.ErrNotFound)
		}
		if err != nil {
			return err
		}
		w.Seq, w.MsgID = cur.LastReadSeq, cur.LastReadMsgID
		if seq <= cur.LastReadSeq {
			return nil
		}
		if err := q.AdvanceReadWatermark(ctx, sqlcdb.AdvanceReadWatermarkParams{
			Seq: seq, MsgID: msgID, ConversationID: conversationID, UserID: user,
		}); err != nil {
			return err
		}
		w.Seq, w.MsgID, advanced = seq, msgID, true
		return nil
	})
	if err != nil {
		return dialog.Watermark{}, false, fmt.Errorf("advance read watermark of %d in conversation %d: %w", user, conversationID, err)
	}
	return w, advanced, nil
}

// States reads the user's member rows among conversationIDs with their conversations.
func (s *ReadStore) States(ctx context.Context, tenant string, user int64, conversationIDs []int64) ([]dialog.State, error) {
	t, err := s.cluster.tenant(tenant)
	if err != nil {
		return nil, err
	}
	if len(conversationIDs) == 0 {
		return nil, nil
	}
	rows, err := t.q.MemberStates(ctx, sqlcdb.MemberStatesParams{UserID: user, ConversationIds: conversationIDs})
	if err != nil {
		return nil, fmt.Errorf("conversation states of %d: %w", user, err)
	}
	out := make([]dialog.State, len(rows))
	for i, r := range rows {
		out[i] = stateOf(sqlcdb.AllMemberStatesRow(r))
	}
	return out, nil
}

// AllStates reads every conversation of the user that has a message.
func (s *ReadStore) AllStates(ctx context.Context, tenant string, user int64) ([]dialog.State, error) {
	t, err := s.cluster.tenant(tenant)
	if err != nil {
		return nil, err
	}
	rows, err := t.q.AllMemberStates(ctx, user)
	if err != nil {
		return nil, fmt.Errorf("all conversation states of %d: %w", user, err)
	}
	out := make([]dialog.State, len(rows))
	for i, r := range rows {
		out[i] = stateOf(r)
	}
	return out, nil
}

func stateOf(r sqlcdb.AllMemberStatesRow) dialog.State {
	return dialog.State{
		ConversationID: r.ID, Topic: r.Topic, LastSeq: r.LastSeq, LastMsgID: r.LastMsgID, LastMsgAt: r.LastMsgAt.UTC(),
		ReadSeq: r.LastReadSeq, ReadMsgID: r.LastReadMsgID, Muted: r.Muted != 0,
	}
}

// SetMuted sets the member row's mute flag.
func (s *ReadStore) SetMuted(ctx context.Context, tenant string, user, conversationID int64, muted bool) error {
	t, err := s.cluster.tenant(tenant)
	if err != nil {
		return err
	}
	member, err := t.q.IsConversationMember(ctx, sqlcdb.IsConversationMemberParams{ConversationID: conversationID, UserID: user})
	if err != nil {
		return fmt.Errorf("is %d a member of conversation %d: %w", user, conversationID, err)
	}
	if !member {
		return fmt.Errorf("member %d of conversation %d: %w", user, conversationID, social.ErrNotFound)
	}
	var flag int8
	if muted {
		flag = 1
	}
	if err := t.q.SetMemberMuted(ctx, sqlcdb.SetMemberMutedParams{Muted: flag, ConversationID: conversationID, UserID: user}); err != nil {
		return fmt.Errorf("set muted of %d in conversation %d: %w", user, conversationID, err)
	}
	return nil
}

var _ ports.MessageFinder = (*MessageStore)(nil)

// FindByID reads a message by its primary key from one registered month table.
func (s *MessageStore) FindByID(ctx context.Context, tenant string, m month.Month, msgID int64) (message.Message, error) {
	t, err := s.cluster.tenant(tenant)
	if err != nil {
		return message.Message{}, err
	}
	table, err := t.months.on(ctx, t.db, m)
	if err != nil {
		return message.Message{}, fmt.Errorf("find msg_id %d: %w", msgID, err)
	}
	row, err := sqlcdb.New(table).MessageByID(ctx, msgID)
	if errors.Is(err, sql.ErrNoRows) {
		return message.Message{}, fmt.Errorf("find msg_id %d in %s: %w", msgID, m, message.ErrNotFound)
	}
	if err != nil {
		return message.Message{}, fmt.Errorf("find msg_id %d in %s: %w", msgID, m, err)
	}
	return fromRow(row, m)
}
