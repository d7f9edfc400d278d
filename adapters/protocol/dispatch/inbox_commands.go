package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/imdhq/imd/clients/go/frame"
	"github.com/imdhq/imd/clients/go/wire"
	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/usecase/inbox"
	"github.com/imdhq/imd/core/usecase/read"
)

// addInboxCommands registers READ_MESSAGE and SYNC_INBOX.
func (d *Dispatcher) addInboxCommands() {
	d.handlers[wire.CmdReadMessage] = d.readMessage
	d.handlers[wire.CmdSyncInbox] = d.syncInbox
}

// readMessage answers READ_MESSAGE with the stored watermark (PROTOCOL cmd 8).
func (d *Dispatcher) readMessage(ctx context.Context, r *request) (any, error) {
	var req wire.ReadRequest
	if err := decodeBody(r.frame.Body, &req); err != nil {
		return nil, err
	}
	r.topic, r.conversationID, r.msgID = req.Topic, req.ConversationID, max(req.MsgID, req.LastMsgID)
	w, err := d.deps.Read.Read(ctx, read.Request{
		Tenant: r.identity.Tenant, User: r.identity.User, Device: r.identity.Device,
		Topic: req.Topic, Seq: req.Seq, ConversationID: req.ConversationID, MsgID: req.MsgID, LastMsgID: req.LastMsgID,
	})
	if err != nil {
		return nil, err
	}
	r.topic, r.conversationID, r.msgID = w.Topic, w.ConversationID, w.MsgID
	return wire.ReadResponse{Topic: w.Topic, ConversationID: w.ConversationID, Seq: w.Seq, MsgID: w.MsgID}, nil
}

// syncInbox answers SYNC_INBOX with its pages (cmd 10) and then the FINISH frame (cmd 11).
func (d *Dispatcher) syncInbox(ctx context.Context, r *request) (any, error) {
	var req wire.SyncInboxRequest
	if err := decodeBody(r.frame.Body, &req); err != nil {
		return nil, err
	}
	res, err := d.deps.Inbox.Sync(ctx, inbox.SyncRequest{
		Tenant: r.identity.Tenant, User: r.identity.User, Device: r.identity.Device,
		MailboxSeq: req.MailboxSeq, DialogScore: req.DialogScore, Limit: req.Limit,
	})
	if err != nil {
		return nil, err
	}
	dialogs := make([]wire.Dialog, len(res.Dialogs))
	for i, d := range res.Dialogs {
		if dialogs[i], err = wireDialog(d); err != nil {
			return nil, apperr.Wrap(apperr.Internal, "internal error", err)
		}
	}
	events := make([]wire.Event, len(res.Events))
	for i, e := range res.Events {
		data, err := e.Data()
		if err == nil {
			err = json.Unmarshal(data, &events[i])
		}
		if err != nil {
			return nil, apperr.Wrap(apperr.Internal, "internal error", err)
		}
	}
	if err := d.sendInboxPages(r, dialogs, events); err != nil {
		return nil, err
	}
	return wire.SyncInboxFinish{MailboxSeq: res.MailboxSeq, DialogScore: res.DialogScore, HasMore: res.HasMore}, nil
}

func wireDialog(d inbox.Dialog) (wire.Dialog, error) {
	w := wire.Dialog{
		Topic: d.Topic, ConversationID: d.ConversationID, Score: d.Score, LastSeq: d.LastSeq,
		ReadSeq: d.ReadSeq, Unread: d.Unread, Muted: d.Muted, Pinned: d.Pinned,
	}
	if d.Preview.MsgID != 0 {
		raw, err := json.Marshal(d.Preview)
		if err != nil {
			return wire.Dialog{}, fmt.Errorf("preview of conversation %d: %w", d.ConversationID, err)
		}
		w.Preview = raw
	}
	return w, nil
}

// sendInboxPages writes one SYNC_INBOX page, or several when it does not fit a frame: dialogs
// and events apart, then halves. No page is written for nothing.
func (d *Dispatcher) sendInboxPages(r *request, dialogs []wire.Dialog, events []wire.Event) error {
	if len(dialogs)+len(events) == 0 {
		return nil
	}
	body, err := wire.OK(r.frame.RequestID, wire.SyncInboxPage{Dialogs: dialogs, Events: events})
	if err != nil {
		return apperr.Wrap(apperr.Internal, "internal error", err)
	}
	f, err := frame.Append(nil, wire.CmdSyncInbox, r.frame.RequestID, r.frame.SequenceID, body, d.cfg.CompressMin)
	if errors.Is(err, frame.ErrTooLarge) {
		switch {
		case len(dialogs) > 0 && len(events) > 0:
			if err := d.sendInboxPages(r, dialogs, []wire.Event{}); err != nil {
				return err
			}
			return d.sendInboxPages(r, []wire.Dialog{}, events)
		case len(dialogs) > 1:
			half := len(dialogs) / 2
			if err := d.sendInboxPages(r, dialogs[:half], events); err != nil {
				return err
			}
			return d.sendInboxPages(r, dialogs[half:], events)
		case len(events) > 1:
			half := len(events) / 2
			if err := d.sendInboxPages(r, dialogs, events[:half]); err != nil {
				return err
			}
			return d.sendInboxPages(r, dialogs, events[half:])
		}
	}
	if err != nil {
		return apperr.Wrap(apperr.Internal, "inbox item does not fit in a frame", err)
	}
	if err := r.conn.out.Send(f); err != nil {
		return apperr.Wrap(apperr.Internal, "connection closed", err)
	}
	return nil
}
