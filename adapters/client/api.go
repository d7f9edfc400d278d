package client

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/imdhq/imd/adapters/protocol"
)

// Auth authenticates the connection.
func (c *Conn) Auth(ctx context.Context, token string, deviceID uint64) (protocol.AuthResponse, error) {
	var resp protocol.AuthResponse
	err := c.call(ctx, protocol.CmdAuth, protocol.AuthRequest{Token: token, DeviceID: deviceID}, &resp)
	return resp, err
}

// Heartbeat sends HEARTBEAT.
func (c *Conn) Heartbeat(ctx context.Context) error {
	var resp protocol.HeartbeatResponse
	return c.call(ctx, protocol.CmdHeartbeat, nil, &resp)
}

// Send sends a message and returns its SEND_ACK.
func (c *Conn) Send(ctx context.Context, req protocol.SendMessageRequest) (protocol.SendAck, error) {
	var ack protocol.SendAck
	err := c.call(ctx, protocol.CmdSendMessage, req, &ack)
	return ack, err
}

// History returns up to limit messages of topic before seq before, newest
// first; before 0 means from the newest, limit 0 the server's default.
func (c *Conn) History(ctx context.Context, topic string, before int64, limit int) ([]protocol.Message, error) {
	var resp protocol.GetHistoryResponse
	err := c.call(ctx, protocol.CmdGetHistory, protocol.GetHistoryRequest{Topic: topic, BeforeSeq: before, Limit: limit}, &resp)
	return resp.Messages, err
}

// SyncMessages returns the messages of topic after seq since, in ascending
// seq over all pages, and the FINISH data; limit 0 means the server's default.
func (c *Conn) SyncMessages(ctx context.Context, topic string, since int64, limit int) (msgs []protocol.Message, finish protocol.SyncMessagesFinish, err error) {
	envs, err := c.RequestStream(ctx, protocol.CmdSyncMessages, protocol.SyncMessagesRequest{Topic: topic, SinceSeq: since, Limit: limit})
	if err != nil {
		return nil, finish, err
	}
	pages, last := envs[:len(envs)-1], envs[len(envs)-1]
	if err := decodeData(protocol.CmdSyncMessagesFinish, last, &finish); err != nil {
		return nil, finish, err
	}
	for _, env := range pages {
		var page protocol.SyncMessagesPage
		if err := decodeData(protocol.CmdSyncMessages, env, &page); err != nil {
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
	return decodeData(protocol.ResponseCommand(cmd), env, out)
}

// decodeData returns a *CodeError for code ≠ 0, else decodes env.Data into out.
func decodeData(cmd uint16, env protocol.Envelope, out any) error {
	if env.Code != protocol.CodeOK {
		return &CodeError{Code: env.Code, Msg: env.Msg}
	}
	if err := json.Unmarshal(env.Data, out); err != nil {
		return fmt.Errorf("%w: command %d: data: %w", ErrProtocol, cmd, err)
	}
	return nil
}
