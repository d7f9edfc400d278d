package e2e

// Bots (issue 32 part 2, docs/DESIGN.md issue-32 "Bots") through the real binary: a bot made
// over the admin API reads its conversations' messages from a webhook endpoint bound to it,
// checks every request with the Go client's webhook.Verify, and answers over the HTTP API with
// its own token; a conversation it is not in never reaches it.

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/imdhq/imd/clients/go/webhook"
	"github.com/imdhq/imd/clients/go/wire"
)

// pingBot answers "ping" with "pong" in the same conversation, as a bot program would.
type pingBot struct {
	t     *testing.T
	srv   *Server
	id    int64
	token string

	mu     sync.Mutex
	secret string
	topics map[string]int // events seen per topic
}

func (b *pingBot) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, webhook.MaxBody))
	b.mu.Lock()
	secret := b.secret
	b.mu.Unlock()
	if err == nil {
		err = webhook.Verify(secret, r.Header.Get(webhook.SignatureHeader), body, time.Now(), webhook.DefaultTolerance)
	}
	if err != nil {
		b.t.Errorf("a request to the bot does not verify: %v", err)
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	var e struct {
		ID    string `json:"id"`
		Type  string `json:"type"`
		Topic string `json:"topic"`
		Data  struct {
			From    int64 `json:"from"`
			Content struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &e); err != nil {
		b.t.Errorf("bot event %s: %v", body, err)
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	b.mu.Lock()
	b.topics[e.Topic]++
	b.mu.Unlock()
	if e.Type == "message.created" && e.Data.From != b.id && e.Data.Content.Text == "ping" {
		reply := map[string]any{"topic": e.Topic, "client_msg_id": "pong-" + e.ID, "type": "text", "content": map[string]string{"text": "pong"}}
		if status, failure := call(b.t, b.srv, b.token, "POST", "/api/v1/messages", reply, nil); status != http.StatusOK {
			b.t.Errorf("the bot's answer: HTTP %d %+v", status, failure)
			w.WriteHeader(http.StatusServiceUnavailable) // retried: the answer is idempotent by client_msg_id
			return
		}
	}
	w.WriteHeader(http.StatusOK)
}

func (b *pingBot) seen(topic string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.topics[topic]
}

func TestABotAnswersAPingThroughASignedWebhook(t *testing.T) {
	srv := Start(t, Options{Env: map[string]string{"IMD_WEBHOOKS_INTERVAL": "100ms"}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	user := srv.User(1)
	srv.User(2)

	var made struct {
		BotID int64  `json:"bot_id"`
		Name  string `json:"name"`
		Token string `json:"token"`
	}
	srv.MustAdmin("POST", "/bots", map[string]any{"bot_id": 900, "name": "pingbot"}, &made)
	if made.BotID != 900 || made.Token == "" {
		t.Fatalf("bot made = %+v, want its id and a token", made)
	}
	var listed struct {
		Bots []struct {
			BotID int64  `json:"bot_id"`
			Token string `json:"token"`
		} `json:"bots"`
	}
	srv.MustAdmin("GET", "/bots", nil, &listed)
	if len(listed.Bots) != 1 || listed.Bots[0].BotID != 900 || listed.Bots[0].Token != "" {
		t.Fatalf("bots listed %+v: want the bot, without its token", listed.Bots)
	}

	withBot, without := srv.Group(31, 1, 900), srv.Group(32, 1, 2)
	bot := &pingBot{t: t, srv: srv, id: 900, token: made.Token, topics: map[string]int{}}
	hooks := httptest.NewServer(bot)
	defer hooks.Close()
	var endpoint struct {
		Secret string `json:"secret"`
		BotID  int64  `json:"bot_id"`
	}
	srv.MustAdmin("POST", "/webhooks", map[string]any{"url": hooks.URL, "events": []string{"message.created"}, "bot_id": 900}, &endpoint)
	if endpoint.BotID != 900 {
		t.Fatalf("endpoint bound to %d, want 900", endpoint.BotID)
	}
	bot.mu.Lock()
	bot.secret = endpoint.Secret
	bot.mu.Unlock()
	if status := srv.Admin("POST", "/webhooks", map[string]any{"url": hooks.URL, "events": []string{"message.created"}, "bot_id": 2}, nil); status != http.StatusBadRequest {
		t.Fatalf("an endpoint bound to a user that is no bot: HTTP %d, want 400", status)
	}

	c := srv.Connect(ctx, user, 1)
	mustSend(t, ctx, c, wire.SendMessageRequest{Topic: without, ClientMsgID: "elsewhere", Type: "text", Content: json.RawMessage(`{"text":"ping"}`)})
	mustSend(t, ctx, c, wire.SendMessageRequest{Topic: withBot, ClientMsgID: "ping-1", Type: "text", Content: json.RawMessage(`{"text":"ping"}`)})
	deadline := time.After(30 * time.Second)
	for pong := false; !pong; {
		select {
		case p := <-c.Pushes():
			if p.Command != wire.CmdMessage || p.Message == nil || p.Message.From != 900 {
				continue
			}
			var content struct {
				Text string `json:"text"`
			}
			if err := json.Unmarshal(p.Message.Content, &content); err != nil || content.Text != "pong" || p.Message.Topic != withBot {
				t.Fatalf("the bot pushed %+v, want pong in %s", p.Message, withBot)
			}
			pong = true
		case <-deadline:
			t.Fatalf("no pong from the bot; it saw %v", bot.topics)
		}
	}
	// The bot's own pong comes back to it too (it is a member); the other group never does.
	eventually(t, 30*time.Second, "the bot saw its pong", func() bool { return bot.seen(withBot) == 2 })
	if n := bot.seen(without); n != 0 {
		t.Fatalf("the bot's endpoint got %d events of %s, a group it is not in", n, without)
	}

	// The operator finds the bot and its endpoint on the console's Webhooks page, adds one and
	// deletes it.
	br := signedInConsole(t, srv)
	br.open("webhooks", "#bots-table tbody tr")
	br.waitText("#bots-table", "pingbot", 30*time.Second)
	br.waitText("#webhooks-table", "900", 30*time.Second)
	br.submit("bot-add", map[string]string{"bot-add-bot_id": "901", "bot-add-name": "second"})
	br.waitText("#bot-add-result", "shown this once", 30*time.Second)
	br.waitText("#bots-table", "second", 30*time.Second)
	br.shot("bots")
	br.submit("bot-delete", map[string]string{"bot-delete-bot_id": "901"})
	br.click("#bot-delete-result .confirm-yes")
	br.waitText("#bot-delete-result", "bot 901 deleted", 30*time.Second)
}

// TestEditsAndRecallsReachAnEndpoint: an edit and a recall made over the frame protocol reach
// an endpoint subscribed to them as signed message.edited and message.recalled events, with
// the content after the edit, from the revision records MySQL keeps.
func TestEditsAndRecallsReachAnEndpoint(t *testing.T) {
	srv := Start(t, Options{Env: map[string]string{"IMD_WEBHOOKS_INTERVAL": "100ms", "IMD_WEBHOOKS_SETTLE": "500ms",
		"IMD_WEBHOOKS_FIRST_RETRY": "200ms", "IMD_WEBHOOKS_MAX_BACKOFF": "400ms", "IMD_WEBHOOKS_MAX_ATTEMPTS": "1000"}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	owner := srv.User(1)
	srv.User(2)
	topic := srv.Group(41, 1, 2)

	type event struct {
		ID   string `json:"id"`
		Type string `json:"type"`
		Data struct {
			Seq     int64 `json:"seq"`
			Version int   `json:"version"`
			Editor  int64 `json:"editor"`
			Content struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"data"`
	}
	var (
		mu     sync.Mutex
		secret string
		refuse = true // until the backlog's age was seen to grow
		got    []event
	)
	hooks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		var e event
		if !readEvent(t, w, r, secret, &e) {
			return
		}
		if refuse {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		got = append(got, e)
	}))
	defer hooks.Close()
	var made struct {
		Secret string `json:"secret"`
	}
	srv.MustAdmin("POST", "/webhooks", map[string]any{"url": hooks.URL, "events": []string{"message.edited", "message.recalled"}}, &made)
	mu.Lock()
	secret = made.Secret
	mu.Unlock()

	c := srv.Connect(ctx, owner, 1)
	for i := 1; i <= 2; i++ {
		mustSend(t, ctx, c, wire.SendMessageRequest{Topic: topic, ClientMsgID: "m" + strconv.Itoa(i), Type: "text", Content: json.RawMessage(`{"text":"a"}`)})
	}
	rises(t, srv, func() {
		if _, err := edit(ctx, c, topic, 1, "b", 1); err != nil {
			t.Fatalf("edit: %v", err)
		}
		if _, err := recall(ctx, c, topic, 2); err != nil {
			t.Fatalf("recall: %v", err)
		}
	}, metric("webhook_oldest_undelivered_seconds")) // the receiver refuses: the edit waits
	mu.Lock()
	refuse = false
	mu.Unlock()
	eventually(t, 30*time.Second, "the edit and the recall delivered", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) >= 2
	})
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 || got[0].ID != topic+":1:message.edited:2" || got[0].Data.Content.Text != "b" || got[0].Data.Editor != 1 ||
		got[1].ID != topic+":2:message.recalled:2" || got[1].Type != "message.recalled" || got[1].Data.Seq != 2 {
		t.Fatalf("events %+v, want the edit (text b) then the recall", got)
	}
}

// readEvent reads a webhook request signed with secret into e, its id the Imd-Event-Id
// header's; false, with a 400 answered and the test failed, when it is not.
func readEvent(t *testing.T, w http.ResponseWriter, r *http.Request, secret string, e any) bool {
	body, err := webhook.ReadVerified(r, secret, time.Now())
	var id struct {
		ID string `json:"id"`
	}
	if err == nil {
		err = json.Unmarshal(body, e)
	}
	if err == nil {
		err = json.Unmarshal(body, &id)
	}
	if err != nil || id.ID != r.Header.Get(webhook.EventIDHeader) {
		t.Errorf("event %s: %v", body, err)
		w.WriteHeader(http.StatusBadRequest)
		return false
	}
	return true
}
