package client

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/imdhq/imd/clients/go/wire"
)

// Auth authenticates the connection.
func (c *Conn) Auth(ctx context.Context, token string, deviceID uint64) (wire.AuthResponse, error) {
	return c.AuthWith(ctx, wire.AuthRequest{Token: token, DeviceID: deviceID})
}

// AuthWith authenticates with a whole AUTH body: the platform, and the live pushes to
// subscribe to (PRESENCE, TYPING_NOTICE, RECEIPT), which a connection gets only when it asks.
func (c *Conn) AuthWith(ctx context.Context, req wire.AuthRequest) (wire.AuthResponse, error) {
	var resp wire.AuthResponse
	err := c.call(ctx, wire.CmdAuth, req, &resp)
	return resp, err
}

// Heartbeat sends HEARTBEAT.
func (c *Conn) Heartbeat(ctx context.Context) error {
	var resp wire.HeartbeatResponse
	return c.call(ctx, wire.CmdHeartbeat, nil, &resp)
}

// Send sends a message and returns its SEND_ACK.
func (c *Conn) Send(ctx context.Context, req wire.SendMessageRequest) (wire.SendAck, error) {
	var ack wire.SendAck
	err := c.call(ctx, wire.CmdSendMessage, req, &ack)
	return ack, err
}

// History returns up to limit messages of topic before seq before, newest
// first; before 0 means from the newest, limit 0 the server's default.
func (c *Conn) History(ctx context.Context, topic string, before int64, limit int) ([]wire.Message, error) {
	var resp wire.GetHistoryResponse
	err := c.call(ctx, wire.CmdGetHistory, wire.GetHistoryRequest{Topic: topic, BeforeSeq: before, Limit: limit}, &resp)
	return resp.Messages, err
}

// MarkRead moves the user's read mark of topic up to seq (READ_MESSAGE) and
// returns the mark the server stored; the user's other devices get it pushed.
func (c *Conn) MarkRead(ctx context.Context, topic string, seq int64) (wire.ReadResponse, error) {
	var resp wire.ReadResponse
	err := c.call(ctx, wire.CmdReadMessage, wire.ReadRequest{Topic: topic, Seq: seq}, &resp)
	return resp, err
}

// dialogsPage is the page size Dialogs asks for.
const dialogsPage = 100

// Dialogs lists every conversation of the user's inbox: SYNC_INBOX from the
// start, all pages. The mailbox events it also returns are left out.
func (c *Conn) Dialogs(ctx context.Context) ([]wire.Dialog, error) {
	var dialogs []wire.Dialog
	var score int64
	for {
		pages, finish, err := c.syncInbox(ctx, 0, score, dialogsPage)
		if err != nil {
			return nil, err
		}
		for _, page := range pages {
			dialogs = append(dialogs, page.Dialogs...)
		}
		// A cursor that does not move would list the same page again.
		if !finish.HasMore || finish.DialogScore == score {
			return dialogs, nil
		}
		score = finish.DialogScore
	}
}

// syncInbox runs one SYNC_INBOX from the given cursors and returns its pages
// and FINISH data.
func (c *Conn) syncInbox(ctx context.Context, mailbox, score int64, limit int) ([]wire.SyncInboxPage, wire.SyncInboxFinish, error) {
	var finish wire.SyncInboxFinish
	envs, err := c.RequestStream(ctx, wire.CmdSyncInbox, wire.SyncInboxRequest{MailboxSeq: mailbox, DialogScore: score, Limit: limit})
	if err != nil {
		return nil, finish, err
	}
	if err := decodeData(wire.CmdSyncInboxFinish, envs[len(envs)-1], &finish); err != nil {
		return nil, finish, err
	}
	pages := make([]wire.SyncInboxPage, len(envs)-1)
	for i, env := range envs[:len(envs)-1] {
		if err := decodeData(wire.CmdSyncInbox, env, &pages[i]); err != nil {
			return nil, finish, err
		}
	}
	return pages, finish, nil
}

// SyncMessages returns the messages of topic after seq since, in ascending
// seq over all pages, and the FINISH data; limit 0 means the server's default.
func (c *Conn) SyncMessages(ctx context.Context, topic string, since int64, limit int) (msgs []wire.Message, finish wire.SyncMessagesFinish, err error) {
	envs, err := c.RequestStream(ctx, wire.CmdSyncMessages, wire.SyncMessagesRequest{Topic: topic, SinceSeq: since, Limit: limit})
	if err != nil {
		return nil, finish, err
	}
	pages, last := envs[:len(envs)-1], envs[len(envs)-1]
	if err := decodeData(wire.CmdSyncMessagesFinish, last, &finish); err != nil {
		return nil, finish, err
	}
	for _, env := range pages {
		var page wire.SyncMessagesPage
		if err := decodeData(wire.CmdSyncMessages, env, &page); err != nil {
			return nil, finish, err
		}
		msgs = append(msgs, page.Messages...)
	}
	return msgs, finish, nil
}

// call sends a one-response request and decodes the data of its envelope
// into out.
func (c *Conn) call(ctx context.Context, cmd uint16, req, out any) error {
	env, err := c.Request(ctx, cmd, req)
	if err != nil {
		return err
	}
	return decodeData(wire.ResponseCommand(cmd), env, out)
}

// decodeData returns a *CodeError for code ≠ 0, else decodes env.Data into out.
func decodeData(cmd uint16, env wire.Envelope, out any) error {
	if env.Code != wire.CodeOK {
		return &CodeError{Code: env.Code, Msg: env.Msg}
	}
	if err := json.Unmarshal(env.Data, out); err != nil {
		return fmt.Errorf("%w: command %d: data: %w", ErrProtocol, cmd, err)
	}
	return nil
}
