// Package chat is the interactive client of `imctl chat`: it prints the
// conversation's incoming messages and sends each typed line, so two
// terminals are enough to try imd. It runs on client.Client, so it stays
// connected when idle, and across a server restart it reconnects, resends
// and prints what it missed.
package chat

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/imdhq/imd/clients/go/client"
	"github.com/imdhq/imd/clients/go/wire"
)

// Help lists the commands a session understands.
const Help = `type a line to send it; commands:
  /history N   the last N messages (at most 200)
  /sync SEQ    every message after SEQ
  /help        this text
  /quit        leave (Ctrl-D too)`

// Conn is what a session needs of a connection; *client.Client has it.
type Conn interface {
	Send(ctx context.Context, req wire.SendMessageRequest) (wire.SendAck, error)
	History(ctx context.Context, topic string, before int64, limit int) ([]wire.Message, error)
	SyncMessages(ctx context.Context, topic string, since int64, limit int) ([]wire.Message, wire.SyncMessagesFinish, error)
	Events() <-chan client.Event
	Err() error
}

// Session is one interactive conversation.
type Session struct {
	conn  Conn
	topic string
	newID func() string // a fresh client_msg_id

	mu  sync.Mutex // one writer at a time: pushes arrive while the user types
	out io.Writer
}

// NewSession returns a session on topic writing to out; newID returns a
// fresh client_msg_id for each message.
func NewSession(conn Conn, topic string, out io.Writer, newID func() string) *Session {
	return &Session{conn: conn, topic: topic, newID: newID, out: out}
}

// Run prints events and executes input lines until /quit, the end of in, ctx
// ending, or the client ending for good (which is the error returned). Lines
// run on their own goroutine, so a send waiting out a reconnect never stops
// the printing of what arrives.
func (s *Session) Run(ctx context.Context, in io.Reader) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	input := make(chan struct{})
	go func() {
		defer close(input)
		sc := bufio.NewScanner(in)
		for sc.Scan() && ctx.Err() == nil {
			if quit := s.handle(ctx, strings.TrimSpace(sc.Text())); quit {
				return
			}
		}
	}()
	events := s.conn.Events()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-input:
			return nil
		case e, ok := <-events:
			if !ok {
				return fmt.Errorf("chat: connection closed: %w", s.conn.Err())
			}
			s.showEvent(e)
		}
	}
}

// handle runs one input line and reports whether it was /quit.
func (s *Session) handle(ctx context.Context, line string) (quit bool) {
	cmd, arg, _ := strings.Cut(line, " ")
	arg = strings.TrimSpace(arg)
	switch {
	case line == "":
	case cmd == "/quit":
		return true
	case cmd == "/help":
		s.printf("%s\n", Help)
	case cmd == "/history":
		n, err := strconv.Atoi(arg)
		if err != nil || n < 1 || n > wire.MaxSyncLimit {
			s.printf("! usage: /history N (1-%d)\n", wire.MaxSyncLimit)
			return false
		}
		msgs, err := s.conn.History(ctx, s.topic, 0, n)
		if err != nil {
			s.printf("! history: %v\n", err)
			return false
		}
		slices.Reverse(msgs) // newest first on the wire; oldest first to read
		s.showAll(msgs)
	case cmd == "/sync":
		since, err := strconv.ParseInt(arg, 10, 64)
		if err != nil || since < 0 {
			s.printf("! usage: /sync SEQ\n")
			return false
		}
		s.sync(ctx, since)
	case strings.HasPrefix(cmd, "/"):
		s.printf("! unknown command %s; /help lists them\n", cmd)
	default:
		s.send(ctx, line)
	}
	return false
}

func (s *Session) send(ctx context.Context, text string) {
	body, err := json.Marshal(map[string]string{"text": text})
	if err != nil {
		s.printf("! %v\n", err)
		return
	}
	ack, err := s.conn.Send(ctx, wire.SendMessageRequest{Topic: s.topic, ClientMsgID: s.newID(), Type: wire.TypeText, Content: body})
	if err != nil {
		s.printf("! send: %v\n", err)
		return
	}
	s.printf("  (sent as seq %d)\n", ack.Seq)
}

// sync prints every message after since, following the pages.
func (s *Session) sync(ctx context.Context, since int64) {
	for {
		msgs, finish, err := s.conn.SyncMessages(ctx, s.topic, since, wire.MaxSyncLimit)
		if err != nil {
			s.printf("! sync: %v\n", err)
			return
		}
		s.showAll(msgs)
		if !finish.HasMore || len(msgs) == 0 || msgs[len(msgs)-1].Seq <= since {
			s.printf("  (up to seq %d)\n", finish.LastSeq)
			return
		}
		since = msgs[len(msgs)-1].Seq
	}
}

func (s *Session) showAll(msgs []wire.Message) {
	if len(msgs) == 0 {
		s.printf("  (no messages)\n")
	}
	for _, m := range msgs {
		s.printf("%s\n", s.Format(m))
	}
}

func (s *Session) showEvent(e client.Event) {
	switch e.Kind {
	case client.EventMessage:
		s.printf("%s\n", s.Format(*e.Message))
	case client.EventDisconnected:
		s.printf("! disconnected: %v\n", e.Err)
	case client.EventConnected:
		s.printf("  (connected as user %d)\n", e.Me.UserID)
	case client.EventSynced:
		if e.Err != nil {
			s.printf("! catching up: %v\n", e.Err)
		}
	case client.EventPush:
		s.showPush(e.Push)
	}
}

func (s *Session) showPush(p client.Push) {
	switch p.Command {
	case wire.CmdKick:
		var k wire.Kick
		_ = json.Unmarshal(p.Envelope.Data, &k)
		s.printf("! kicked: %s\n", k.Reason)
	case wire.CmdEvent:
		var e struct {
			Type string `json:"type"`
		}
		_ = json.Unmarshal(p.Envelope.Data, &e)
		s.printf("  (event %s)\n", e.Type)
	}
}

// Format renders a message as "[seq] user: text", naming the topic when it
// is not the session's.
func (s *Session) Format(m wire.Message) string {
	prefix := ""
	if m.Topic != "" && m.Topic != s.topic {
		prefix = "(" + m.Topic + ") "
	}
	return fmt.Sprintf("%s[%d] %d: %s", prefix, m.Seq, m.From, Text(m))
}

// Text is a one-line rendering of a message's content.
func Text(m wire.Message) string {
	switch m.Status {
	case wire.StatusRecalled, wire.StatusDeleted:
		return "(" + m.Status + ")"
	}
	if m.Type == wire.TypeText {
		var c struct {
			Text *string `json:"text"`
		}
		if json.Unmarshal(m.Content, &c) == nil && c.Text != nil {
			return *c.Text
		}
	}
	return "<" + m.Type + "> " + string(m.Content)
}

func (s *Session) printf(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fmt.Fprintf(s.out, format, args...)
}
