package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/imdhq/imd/clients/go/wire"
)

// dialogRewind is how far before its cursor catch-up asks for changed
// conversations. A conversation's score is its last message's time, written
// by the deliver worker after the message is stored, so a message stored just
// before the previous sync can carry a score below the cursor that sync
// returned. Listing a few conversations again costs one empty SYNC_MESSAGES
// each.
const dialogRewind = 10 * time.Second

// maxReplay bounds how many messages of a conversation the client knew
// nothing of are looked at: they are replayed only from the horizon on.
const maxReplay = 1000

// catchUp runs the two-level sync after AUTH: SYNC_INBOX lists the
// conversations that changed since the cursor and the mailbox events after
// its own, then SYNC_MESSAGES pages each such conversation from the last seq
// the caller has. Replayed messages go out as events, skipping what the
// caller got already; the dialog cursor moves only once every conversation
// is caught up, so a catch-up cut short is redone in full.
func (c *Client) catchUp(conn *Conn) error {
	c.mu.Lock()
	mailbox, score, mailboxKnown := c.state.MailboxSeq, c.state.DialogScore, c.mailboxKnown
	c.liveEvents = make(map[int64]struct{})
	c.mu.Unlock()

	from := max(0, score-dialogRewind.Milliseconds())
	lastSeq := make(map[string]wire.Dialog)
	var order []string
	for {
		pages, finish, err := conn.syncInbox(c.ctx, mailbox, from, wire.MaxSyncLimit)
		if err != nil {
			return err
		}
		for _, page := range pages {
			for _, d := range page.Dialogs {
				if _, ok := lastSeq[d.Topic]; !ok {
					order = append(order, d.Topic)
				}
				lastSeq[d.Topic] = d
			}
			if mailboxKnown {
				c.replayEvents(page.Events)
			}
		}
		mailbox = finish.MailboxSeq
		from = max(from, finish.DialogScore)
		if !finish.HasMore {
			break
		}
	}
	c.mu.Lock()
	c.state.MailboxSeq, c.mailboxKnown = mailbox, true
	c.mu.Unlock()

	c.log.Debug("inbox synced", "mailbox_seq", mailbox, "dialog_score", from, "conversations", len(order))
	for _, topic := range order {
		if err := c.catchUpTopic(conn, lastSeq[topic]); err != nil {
			return fmt.Errorf("topic %s: %w", topic, err)
		}
	}
	c.mu.Lock()
	c.state.DialogScore = max(c.state.DialogScore, from)
	c.mu.Unlock()
	return nil
}

// replayEvents delivers mailbox events that were not pushed live.
func (c *Client) replayEvents(events []wire.Event) {
	for _, e := range events {
		data, err := json.Marshal(e)
		if err != nil {
			continue
		}
		if seq, ok := mailboxSeq(data); ok {
			c.mu.Lock()
			_, live := c.liveEvents[seq]
			c.mu.Unlock()
			if live {
				continue
			}
		}
		c.emit(Event{Kind: EventPush, Replayed: true, Push: Push{Command: wire.CmdEvent,
			Envelope: wire.Envelope{Code: wire.CodeOK, Msg: wire.MsgOK, Data: data}}})
	}
}

// catchUpTopic replays the messages of d's topic the caller does not have. A
// topic the client has no position in starts at the larger of the read mark
// and maxReplay before the end, and only messages after the horizon count as
// missed: one of the same millisecond as the first AUTH is history.
func (c *Client) catchUpTopic(conn *Conn, d wire.Dialog) error {
	c.mu.Lock()
	t := c.topic(d.Topic)
	known, since, horizon := t.floorKnown, t.floor, c.state.Horizon
	c.mu.Unlock()
	if known && since >= d.LastSeq {
		return nil
	}
	if !known {
		since = max(0, d.ReadSeq, d.LastSeq-maxReplay)
	}
	start := since
	for {
		msgs, finish, err := conn.SyncMessages(c.ctx, d.Topic, since, wire.MaxSyncLimit)
		if ce, ok := errors.AsType[*CodeError](err); ok && (ce.Code == wire.CodeForbidden || ce.Code == wire.CodeNotFound) {
			return nil // left or gone since the inbox listed it
		}
		if err != nil {
			return err
		}
		for _, m := range msgs {
			if !known && m.CreatedAt <= horizon {
				c.mu.Lock()
				t.add(m.Seq)
				c.mu.Unlock()
				continue
			}
			c.offer(m, true)
		}
		if !finish.HasMore || len(msgs) == 0 || msgs[len(msgs)-1].Seq <= since {
			break
		}
		since = msgs[len(msgs)-1].Seq
	}
	c.log.Debug("conversation caught up", "topic", d.Topic, "since", start, "last_seq", d.LastSeq)
	if !known {
		c.mu.Lock()
		t.setFloor(start)
		c.mu.Unlock()
	}
	return nil
}

// mailboxSeq is the mailbox_seq of an EVENT's data, when it has one.
func mailboxSeq(data json.RawMessage) (int64, bool) {
	var e struct {
		MailboxSeq *int64 `json:"mailbox_seq"`
	}
	if json.Unmarshal(data, &e) != nil || e.MailboxSeq == nil {
		return 0, false
	}
	return *e.MailboxSeq, true
}
