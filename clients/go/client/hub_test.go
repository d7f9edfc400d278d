package client

import (
	"encoding/json"
	"strconv"
	"sync"
	"testing"

	"github.com/imdhq/imd/clients/go/frame"
	"github.com/imdhq/imd/clients/go/wire"
)

// hub is a fake imd with state, for the reconnecting Client: topics with seqs, sends made
// idempotent by client_msg_id, SYNC_INBOX and SYNC_MESSAGES over what is stored, MESSAGE
// pushes to every authenticated session, and knobs to take the server down.
type hub struct {
	t  *testing.T
	mu sync.Mutex
	// clock is the server's time in ms; every stored message advances it.
	clock    int64
	topics   map[string][]wire.Message
	sent     map[string]wire.SendAck // by topic and client_msg_id
	sessions map[*session]bool       // authenticated
	auths    int
	platform string // of the last AUTH
	down     bool   // AUTH answers 50301 and closes, as a node that is starting up
	// dropAcks makes the next sends store the message and close the connection before
	// the SEND_ACK, so the client cannot know it was stored.
	dropAcks   int
	heartbeats chan *session
}

// syncPage is the hub's page size of SYNC_MESSAGES, small so catch-up has to page.
const syncPage = 3

func newHub(t *testing.T) *hub {
	return &hub{t: t, clock: 1_000_000, topics: make(map[string][]wire.Message), sent: make(map[string]wire.SendAck),
		sessions: make(map[*session]bool), heartbeats: make(chan *session, 1024)}
}

func (h *hub) handle(ss *session, f frame.Frame) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch f.Command {
	case wire.CmdAuth:
		req := decodeBody[wire.AuthRequest](h.t, f)
		switch {
		case h.down:
			ss.fail(f, wire.CmdAuth, wire.CodeBusy, "starting")
			ss.conn.Close()
		case req.Token != goodToken:
			ss.fail(f, wire.CmdAuth, wire.CodeUnauthenticated, "bad token")
		default:
			h.auths++
			h.platform = req.Platform
			h.sessions[ss] = true
			ss.ok(f, wire.CmdAuth, wire.AuthResponse{UserID: userID, TenantID: "default", DeviceID: req.DeviceID, ServerTime: h.clock})
		}
	case wire.CmdHeartbeat:
		ss.ok(f, wire.CmdHeartbeat, wire.HeartbeatResponse{ServerTime: h.clock})
		select {
		case h.heartbeats <- ss:
		default:
		}
	case wire.CmdSendMessage:
		req := decodeBody[wire.SendMessageRequest](h.t, f)
		key := req.Topic + "/" + req.ClientMsgID
		ack, dup := h.sent[key]
		if !dup {
			m := h.storeLocked(req.Topic, userID, req.ClientMsgID, req.Content)
			ack = wire.SendAck{MsgID: m.MsgID, Seq: m.Seq, Topic: m.Topic, ClientMsgID: m.ClientMsgID, ServerTime: h.clock}
			h.sent[key] = ack
		}
		if h.dropAcks > 0 {
			h.dropAcks--
			ss.conn.Close()
			return
		}
		ss.ok(f, wire.CmdSendAck, ack)
	case wire.CmdSyncInbox:
		req := decodeBody[wire.SyncInboxRequest](h.t, f)
		var page wire.SyncInboxPage
		score := req.DialogScore
		for topic, msgs := range h.topics {
			last := msgs[len(msgs)-1]
			if last.CreatedAt > req.DialogScore {
				page.Dialogs = append(page.Dialogs, wire.Dialog{Topic: topic, Score: last.CreatedAt, LastSeq: last.Seq})
				score = max(score, last.CreatedAt)
			}
		}
		body, _ := wire.OK(f.RequestID, page)
		ss.send(wire.CmdSyncInbox, f.RequestID, f.SequenceID, body, 0)
		ss.ok(f, wire.CmdSyncInboxFinish, wire.SyncInboxFinish{MailboxSeq: req.MailboxSeq, DialogScore: score})
	case wire.CmdSyncMessages:
		req := decodeBody[wire.SyncMessagesRequest](h.t, f)
		msgs := h.topics[req.Topic]
		var page wire.SyncMessagesPage
		for _, m := range msgs {
			if m.Seq > req.SinceSeq && len(page.Messages) < syncPage {
				page.Messages = append(page.Messages, m)
			}
		}
		fin := wire.SyncMessagesFinish{Topic: req.Topic}
		if len(msgs) > 0 {
			fin.LastSeq = msgs[len(msgs)-1].Seq
		}
		if n := len(page.Messages); n > 0 {
			fin.HasMore = page.Messages[n-1].Seq < fin.LastSeq
			body, _ := wire.OK(f.RequestID, page)
			ss.send(wire.CmdSyncMessages, f.RequestID, f.SequenceID, body, 0)
		}
		ss.ok(f, wire.CmdSyncMessagesFinish, fin)
	case wire.CmdReadMessage:
		req := decodeBody[wire.ReadRequest](h.t, f)
		ss.ok(f, wire.CmdReadMessage, wire.ReadResponse{Topic: req.Topic, Seq: req.Seq})
	case wire.CmdPushAck:
	default:
		ss.fail(f, f.Command, wire.CodeInvalidArgument, "unknown command")
	}
}

// post stores a message of another user and pushes it to every session.
func (h *hub) post(topic string, from int64, text string) wire.Message {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.storeLocked(topic, from, "", json.RawMessage(strconv.Quote(text)))
}

func (h *hub) storeLocked(topic string, from int64, clientMsgID string, content json.RawMessage) wire.Message {
	h.clock++
	seq := int64(len(h.topics[topic]) + 1)
	if clientMsgID == "" {
		clientMsgID = "srv" + strconv.FormatInt(h.clock, 10)
	}
	m := wire.Message{Topic: topic, Seq: seq, MsgID: h.clock, From: from, ClientMsgID: clientMsgID, Type: wire.TypeText,
		Content: content, Mentions: []int64{}, Status: wire.StatusNormal, Version: 1, CreatedAt: h.clock}
	h.topics[topic] = append(h.topics[topic], m)
	if from != userID { // the sender's own device gets no push
		for ss := range h.sessions {
			ss.push(wire.CmdMessage, uint32(h.clock), m)
		}
	}
	return m
}

// kill ends every connection, as a crashed server does.
func (h *hub) kill() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ss := range h.sessions {
		ss.conn.Close()
		delete(h.sessions, ss)
	}
}

func (h *hub) setDown(down bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.down = down
}

// kick sends KICK with reason to every session and closes it.
func (h *hub) kick(reason string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ss := range h.sessions {
		ss.push(wire.CmdKick, 1, wire.Kick{Reason: reason})
		ss.conn.Close()
		delete(h.sessions, ss)
	}
}

func (h *hub) stored(topic string) []wire.Message {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]wire.Message(nil), h.topics[topic]...)
}

func (h *hub) authCount() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.auths
}
