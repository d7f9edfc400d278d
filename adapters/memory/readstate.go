package memory

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/imdhq/imd/core/domain/dialog"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/social"
	"github.com/imdhq/imd/ports"
)

// ReadStore is the in-memory ports.ReadStore. Membership and conversations come from a
// Directory and the last messages from the month tables of a ShardStore (as t_conversations
// follows the stored messages in MySQL); watermarks and mute flags are its own.
type ReadStore struct {
	dir    *Directory
	shards *ShardStore

	mu    sync.Mutex
	marks map[memberKey]readMark
	muted map[memberKey]bool
}

type memberKey struct {
	tenant       string
	conversation int64
	user         int64
}

type readMark struct{ seq, msgID int64 }

var _ ports.ReadStore = (*ReadStore)(nil)

// NewReadStore returns read state over dir's members and shards' messages.
func NewReadStore(dir *Directory, shards *ShardStore) *ReadStore {
	return &ReadStore{dir: dir, shards: shards, marks: make(map[memberKey]readMark), muted: make(map[memberKey]bool)}
}

// conversationsOf returns the conversations the user is a member of, by id.
func (r *ReadStore) conversationsOf(tenant string, user int64) map[int64]social.Conversation {
	r.dir.mu.Lock()
	defer r.dir.mu.Unlock()
	g := r.dir.graph(tenant)
	out := make(map[int64]social.Conversation)
	for id, members := range g.members {
		if members[user] {
			out[id] = g.convs[id]
		}
	}
	return out
}

// last returns the newest stored message of a topic; tombstones of duplicate attempts do not
// count, as they do not advance t_conversations.
func (r *ReadStore) last(tenant, topicName string) (message.Message, bool) {
	r.shards.mu.Lock()
	defer r.shards.mu.Unlock()
	d := r.shards.db(tenant)
	var best message.Message
	for m, seg := range d.mirror[topicName] {
		for sq := seg.MaxSeq; sq >= seg.MinSeq && sq > best.Seq; sq-- {
			if msg, ok := d.tables[m][topicSeqKey{topicName, sq}]; ok && msg.ClientMsgID != "" {
				best = msg
				break
			}
		}
	}
	return best, best.Seq > 0
}

// Advance raises the watermark when seq is past it.
func (r *ReadStore) Advance(_ context.Context, tenant string, user, conversationID, seq, msgID int64) (dialog.Watermark, bool, error) {
	if _, ok := r.conversationsOf(tenant, user)[conversationID]; !ok {
		return dialog.Watermark{}, false, fmt.Errorf("member %d of conversation %d: %w", user, conversationID, social.ErrNotFound)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	k := memberKey{tenant, conversationID, user}
	cur := r.marks[k]
	if seq <= cur.seq {
		return dialog.Watermark{ConversationID: conversationID, Seq: cur.seq, MsgID: cur.msgID}, false, nil
	}
	r.marks[k] = readMark{seq: seq, msgID: msgID}
	return dialog.Watermark{ConversationID: conversationID, Seq: seq, MsgID: msgID}, true, nil
}

func (r *ReadStore) state(tenant string, user int64, c social.Conversation) dialog.State {
	st := dialog.State{ConversationID: c.ID, Topic: c.Topic, LastMsgAt: c.CreatedAt}
	if m, ok := r.last(tenant, c.Topic); ok {
		st.LastSeq, st.LastMsgID, st.LastMsgAt = m.Seq, m.MsgID, m.CreatedAt
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	k := memberKey{tenant, c.ID, user}
	st.ReadSeq, st.ReadMsgID, st.Muted = r.marks[k].seq, r.marks[k].msgID, r.muted[k]
	return st
}

// States returns the user's states among conversationIDs.
func (r *ReadStore) States(_ context.Context, tenant string, user int64, conversationIDs []int64) ([]dialog.State, error) {
	convs := r.conversationsOf(tenant, user)
	var out []dialog.State
	for _, id := range conversationIDs {
		if c, ok := convs[id]; ok {
			out = append(out, r.state(tenant, user, c))
		}
	}
	return out, nil
}

// AllStates returns the states of the user's conversations that have a message, by id.
func (r *ReadStore) AllStates(_ context.Context, tenant string, user int64) ([]dialog.State, error) {
	var out []dialog.State
	for _, c := range r.conversationsOf(tenant, user) {
		if st := r.state(tenant, user, c); st.LastSeq > 0 {
			out = append(out, st)
		}
	}
	slices.SortFunc(out, func(a, b dialog.State) int { return cmp.Compare(a.ConversationID, b.ConversationID) })
	return out, nil
}

// SetMuted sets the member's mute flag.
func (r *ReadStore) SetMuted(_ context.Context, tenant string, user, conversationID int64, muted bool) error {
	if _, ok := r.conversationsOf(tenant, user)[conversationID]; !ok {
		return fmt.Errorf("member %d of conversation %d: %w", user, conversationID, social.ErrNotFound)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.muted[memberKey{tenant, conversationID, user}] = muted
	return nil
}

var _ ports.MessageFinder = (*MessageStore)(nil)

// FindByID looks a message up by msg_id in one registered month.
func (s *MessageStore) FindByID(_ context.Context, tenant string, m month.Month, msgID int64) (message.Message, error) {
	s.shards.mu.Lock()
	defer s.shards.mu.Unlock()
	table, err := s.shards.db(tenant).table(m)
	if err != nil {
		return message.Message{}, fmt.Errorf("find msg_id %d: %w", msgID, err)
	}
	for _, msg := range table {
		if msg.MsgID == msgID {
			return cloneMessage(msg), nil
		}
	}
	return message.Message{}, fmt.Errorf("find msg_id %d in %s: %w", msgID, m, message.ErrNotFound)
}
