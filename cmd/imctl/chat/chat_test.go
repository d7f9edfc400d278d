package chat

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/imdhq/imd/clients/go/client"
	"github.com/imdhq/imd/clients/go/wire"
)

// fakeConn stores sent messages in one topic and answers reads from them.
type fakeConn struct {
	mu      sync.Mutex
	msgs    []wire.Message
	sendErr error
	events  chan client.Event
	err     error
}

func newFake() *fakeConn { return &fakeConn{events: make(chan client.Event, 8)} }

func (f *fakeConn) Send(_ context.Context, req wire.SendMessageRequest) (wire.SendAck, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.sendErr != nil {
		return wire.SendAck{}, f.sendErr
	}
	seq := int64(len(f.msgs) + 1)
	f.msgs = append(f.msgs, wire.Message{Topic: req.Topic, Seq: seq, From: 1, Type: req.Type, Content: req.Content, ClientMsgID: req.ClientMsgID})
	return wire.SendAck{Seq: seq, Topic: req.Topic, ClientMsgID: req.ClientMsgID}, nil
}

func (f *fakeConn) History(_ context.Context, _ string, _ int64, limit int) ([]wire.Message, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []wire.Message
	for i := len(f.msgs) - 1; i >= 0 && len(out) < limit; i-- {
		out = append(out, f.msgs[i])
	}
	return out, nil
}

// SyncMessages pages two messages at a time, to exercise has_more.
func (f *fakeConn) SyncMessages(_ context.Context, topic string, since int64, _ int) ([]wire.Message, wire.SyncMessagesFinish, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if topic == "grp_denied" {
		return nil, wire.SyncMessagesFinish{}, &client.CodeError{Code: wire.CodeForbidden, Msg: "not a member"}
	}
	var out []wire.Message
	for _, m := range f.msgs {
		if m.Seq > since && len(out) < 2 {
			out = append(out, m)
		}
	}
	last := int64(len(f.msgs))
	return out, wire.SyncMessagesFinish{Topic: topic, LastSeq: last, HasMore: len(out) > 0 && out[len(out)-1].Seq < last}, nil
}

func (f *fakeConn) Events() <-chan client.Event { return f.events }
func (f *fakeConn) Err() error                  { return f.err }

func ids() func() string {
	n := 0
	return func() string { n++; return "id" + strconv.Itoa(n) }
}

func TestSessionCommands(t *testing.T) {
	tests := []struct {
		name    string
		topic   string
		sendErr error
		input   string
		want    []string
		notWant []string
	}{
		{
			name: "send then history oldest first", topic: "grp_1",
			input: "hello\n  \nworld\n/history 5\n",
			want:  []string{"(sent as seq 1)", "(sent as seq 2)", "[1] 1: hello\n[2] 1: world\n"},
		},
		{
			name: "history limit", topic: "grp_1",
			input: "a\nb\nc\n/history 1\n",
			want:  []string{"[3] 1: c\n"}, notWant: []string{"[2] 1: b"},
		},
		{
			name: "sync follows pages", topic: "grp_1",
			input: "a\nb\nc\nd\ne\n/sync 1\n",
			want:  []string{"[2] 1: b\n[3] 1: c\n[4] 1: d\n[5] 1: e\n  (up to seq 5)"}, notWant: []string{"[1] 1: a"},
		},
		{
			name: "sync of nothing", topic: "grp_1",
			input: "/sync 0\n",
			want:  []string{"(no messages)", "(up to seq 0)"},
		},
		{
			name: "sync error", topic: "grp_denied",
			input: "/sync 0\n",
			want:  []string{"! sync: imd: code 40301: not a member"},
		},
		{
			name: "send error", topic: "grp_1", sendErr: &client.CodeError{Code: 40301, Msg: "not friends"},
			input: "hi\n",
			want:  []string{"! send: imd: code 40301: not friends"},
		},
		{
			name: "bad arguments", topic: "grp_1",
			input: "/history\n/history 0\n/history 201\n/sync x\n/sync -1\n/nope\n",
			want: []string{"! usage: /history N (1-200)\n! usage: /history N (1-200)\n! usage: /history N (1-200)\n",
				"! usage: /sync SEQ\n! usage: /sync SEQ\n", "! unknown command /nope"},
		},
		{
			name: "help and quit stop reading", topic: "grp_1",
			input: "/help\n/quit\nnever sent\n",
			want:  []string{"/history N"}, notWant: []string{"sent as seq"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake()
			f.sendErr = tt.sendErr
			var out bytes.Buffer
			s := NewSession(f, tt.topic, &out, ids())
			if err := s.Run(context.Background(), strings.NewReader(tt.input)); err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(out.String(), w) {
					t.Errorf("output has %q:\n%s", w, out.String())
				}
			}
		})
	}
}

func TestSentMessagesAreTextWithFreshIDs(t *testing.T) {
	f := newFake()
	s := NewSession(f, "p2p_1_2", io.Discard, ids())
	if err := s.Run(context.Background(), strings.NewReader("say \"hi\"\nagain\n")); err != nil {
		t.Fatal(err)
	}
	if len(f.msgs) != 2 || f.msgs[0].ClientMsgID == f.msgs[1].ClientMsgID || f.msgs[0].Type != wire.TypeText || f.msgs[0].Topic != "p2p_1_2" {
		t.Fatalf("sent %+v", f.msgs)
	}
	if string(f.msgs[0].Content) != `{"text":"say \"hi\""}` {
		t.Fatalf("content %s", f.msgs[0].Content)
	}
}

// syncWriter lets the test read the output while the session writes it.
type syncWriter struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

func TestEventsAndClose(t *testing.T) {
	f := newFake()
	out := &syncWriter{}
	s := NewSession(f, "grp_1", out, ids())
	in, typing := io.Pipe()
	defer typing.Close()
	done := make(chan error, 1)
	go func() { done <- s.Run(context.Background(), in) }()

	text := json.RawMessage(`{"text":"hi there"}`)
	f.events <- client.Event{Kind: client.EventMessage, Message: &wire.Message{Topic: "grp_1", Seq: 7, From: 42, Type: "text", Content: text}}
	f.events <- client.Event{Kind: client.EventMessage, Message: &wire.Message{Topic: "p2p_1_42", Seq: 3, From: 42, Type: "image", Content: json.RawMessage(`{"key":"k"}`)}}
	f.events <- client.Event{Kind: client.EventPush, Push: client.Push{Command: wire.CmdEvent, Envelope: wire.Envelope{Data: json.RawMessage(`{"type":"friend_added"}`)}}}
	f.events <- client.Event{Kind: client.EventDisconnected, Err: errors.New("client: read: EOF")}
	f.events <- client.Event{Kind: client.EventConnected, Me: wire.AuthResponse{UserID: 42}}
	f.events <- client.Event{Kind: client.EventMessage, Replayed: true, Message: &wire.Message{Topic: "grp_1", Seq: 8, From: 7, Type: "text", Content: json.RawMessage(`{"text":"missed"}`)}}
	f.events <- client.Event{Kind: client.EventSynced}
	f.events <- client.Event{Kind: client.EventPush, Push: client.Push{Command: wire.CmdKick, Envelope: wire.Envelope{Data: json.RawMessage(`{"reason":"replaced"}`)}}}
	f.err = errors.New("server went away")
	close(f.events)

	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "server went away") {
			t.Fatalf("Run = %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not end when the connection closed")
	}
	want := "[7] 42: hi there\n(p2p_1_42) [3] 42: <image> {\"key\":\"k\"}\n  (event friend_added)\n" +
		"! disconnected: client: read: EOF\n  (connected as user 42)\n[8] 7: missed\n! kicked: replaced\n"
	if out.String() != want {
		t.Fatalf("output\n%q\nwant\n%q", out.String(), want)
	}
}

func TestRunEndsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	in, typing := io.Pipe()
	defer typing.Close()
	done := make(chan error, 1)
	go func() { done <- NewSession(newFake(), "grp_1", io.Discard, ids()).Run(ctx, in) }()
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run = %v", err)
	}
}

func TestText(t *testing.T) {
	tests := []struct {
		name string
		m    wire.Message
		want string
	}{
		{"text", wire.Message{Type: "text", Content: json.RawMessage(`{"text":"yo"}`)}, "yo"},
		{"text without text", wire.Message{Type: "text", Content: json.RawMessage(`{"body":"yo"}`)}, `<text> {"body":"yo"}`},
		{"recalled", wire.Message{Type: "text", Status: "recalled", Content: json.RawMessage(`{"text":"yo"}`)}, "(recalled)"},
		{"deleted", wire.Message{Type: "text", Status: "deleted"}, "(deleted)"},
		{"location", wire.Message{Type: "location", Content: json.RawMessage(`{"lat":1}`)}, `<location> {"lat":1}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Text(tt.m); got != tt.want {
				t.Fatalf("Text = %q, want %q", got, tt.want)
			}
		})
	}
}
