package e2e

// Event webhooks (issue 32 part 2) through the real binary: an endpoint registered over the
// admin API receives each group's messages as signed message.created requests, checked by the
// Go client's verifier, in seq order per topic; a 500 is retried and the topic waits for it;
// an event refused to the last attempt is a dead letter and its topic moves on.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/imdhq/imd/clients/go/webhook"
	"github.com/imdhq/imd/clients/go/wire"
)

// hookReceiver answers each attempt of an event with the next status of its script (200 when
// none is left) and keeps, per topic, the seqs it took.
type hookReceiver struct {
	t *testing.T

	mu       sync.Mutex
	secret   string // the endpoint's, known once it is made
	script   map[string][]int
	attempts map[string]int
	took     map[string][]int64
}

func (h *hookReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	secret := h.secret
	h.mu.Unlock()
	body, err := webhook.ReadVerified(r, secret, time.Now())
	if err != nil {
		h.t.Errorf("a webhook request does not verify: %v", err)
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	var e struct {
		ID    string `json:"id"`
		Type  string `json:"type"`
		Topic string `json:"topic"`
		Seq   int64  `json:"seq"`
		Data  struct {
			ClientMsgID string `json:"client_msg_id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &e); err != nil || e.Type != "message.created" || e.ID != r.Header.Get(webhook.EventIDHeader) ||
		e.Data.ClientMsgID != fmt.Sprintf("%s-%d", e.Topic, e.Seq) {
		h.t.Errorf("webhook event %s (%v)", body, err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.attempts[e.ID]++
	status := http.StatusOK
	if s := h.script[e.ID]; len(s) > 0 {
		status, h.script[e.ID] = s[0], s[1:]
	}
	if status == http.StatusOK {
		h.took[e.Topic] = append(h.took[e.Topic], e.Seq)
	}
	w.WriteHeader(status)
}

func (h *hookReceiver) seqs(topic string) []int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.took[topic])
}

func TestWebhooksDeliverSignedInOrderWithRetriesAndDeadLetters(t *testing.T) {
	srv := Start(t, Options{Env: map[string]string{
		"IMD_WEBHOOKS_INTERVAL": "100ms", "IMD_WEBHOOKS_FIRST_RETRY": "200ms", "IMD_WEBHOOKS_MAX_BACKOFF": "400ms",
		"IMD_WEBHOOKS_MAX_ATTEMPTS": "3",
	}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	owner := srv.User(1)
	srv.User(2)
	a, b := srv.Group(21, 1, 2), srv.Group(22, 1, 2)
	recv := &hookReceiver{t: t, attempts: map[string]int{}, took: map[string][]int64{},
		script: map[string][]int{
			a + ":2:message.created": {500, 503},      // retried, then taken: seq 3 waits for it
			b + ":1:message.created": {500, 500, 500}, // the last attempt fails: a dead letter
		}}
	hooks := httptest.NewServer(recv)
	defer hooks.Close()

	var made struct {
		WebhookID int64  `json:"webhook_id,string"`
		Secret    string `json:"secret"`
	}
	srv.MustAdmin("POST", "/webhooks", map[string]any{"url": hooks.URL, "events": []string{"message.created"}}, &made)
	recv.mu.Lock()
	recv.secret = made.Secret
	recv.mu.Unlock()

	before := time.Now()
	c := srv.Connect(ctx, owner, 1)
	send := func(topic string, seq int) {
		mustSend(t, ctx, c, wire.SendMessageRequest{Topic: topic, ClientMsgID: fmt.Sprintf("%s-%d", topic, seq), Type: "text",
			Content: json.RawMessage(`{"text":"hi"}`)})
	}
	rises(t, srv, func() {
		for seq := 1; seq <= 3; seq++ {
			send(a, seq)
		}
		send(b, 1)
		send(b, 2)
		eventually(t, 30*time.Second, "every event taken or dead", func() bool {
			return len(recv.seqs(a)) == 3 && len(recv.seqs(b)) == 1
		})
	}, metric("webhook_deliveries_total", "status", "ok"), metric("webhook_deliveries_total", "status", "retry"),
		metric("webhook_deliveries_total", "status", "dead"))

	if got := recv.seqs(a); !slices.Equal(got, []int64{1, 2, 3}) {
		t.Fatalf("%s taken in order %v, want 1 2 3", a, got)
	}
	if got := recv.seqs(b); !slices.Equal(got, []int64{2}) {
		t.Fatalf("%s taken %v, want 2 after 1 was given up", b, got)
	}
	recv.mu.Lock()
	if n := recv.attempts[a+":3:message.created"]; n != 1 {
		t.Errorf("%s seq 3 sent %d times, want once, after seq 2 was taken", a, n)
	}
	recv.mu.Unlock()
	var dead struct {
		DeadLetters []struct {
			Topic     string `json:"topic"`
			Seq       int64  `json:"seq"`
			Attempts  int    `json:"attempts"`
			LastError string `json:"last_error"`
		} `json:"dead_letters"`
	}
	srv.MustAdmin("GET", fmt.Sprintf("/webhooks/%d/dead_letters", made.WebhookID), nil, &dead)
	if d := dead.DeadLetters; len(d) != 1 || d[0].Topic != b || d[0].Seq != 1 || d[0].Attempts != 3 || d[0].LastError != "status 500" {
		t.Fatalf("dead letters %+v, want %s seq 1 after 3 attempts", d, b)
	}

	// A replay from before the messages delivers every topic again, in order; the event given
	// up on is taken this time.
	srv.MustAdmin("POST", fmt.Sprintf("/webhooks/%d/replay", made.WebhookID), map[string]int64{"since": before.UnixMilli()}, nil)
	eventually(t, 30*time.Second, "the replay delivered", func() bool { return len(recv.seqs(a)) == 6 && len(recv.seqs(b)) == 3 })
	if ga, gb := recv.seqs(a), recv.seqs(b); !slices.Equal(ga, []int64{1, 2, 3, 1, 2, 3}) || !slices.Equal(gb, []int64{2, 1, 2}) {
		t.Fatalf("after the replay %s took %v, %s took %v", a, ga, b, gb)
	}

	// The operator finds all of it on the console's Webhooks page, and adds an endpoint there.
	br := signedInConsole(t, srv)
	br.open("webhooks", "#webhooks-table tbody tr")
	br.waitText("#webhooks-table", hooks.URL, 30*time.Second)
	br.waitText("#webhooks-table", fmt.Sprint(made.WebhookID), 30*time.Second) // exact, not rounded to a float64
	br.waitText("#webhooks-metrics", `status="dead"`, 30*time.Second)
	br.submit("webhook-dead", map[string]string{"webhook-dead-webhook_id": fmt.Sprint(made.WebhookID)})
	br.waitText("#webhook-dead-result", "1 dead letter(s)", 30*time.Second)
	br.waitText("#webhook-dead-table", "status 500", 30*time.Second)
	br.submit("webhook-replay", map[string]string{"webhook-replay-webhook_id": fmt.Sprint(made.WebhookID),
		"webhook-replay-since": before.UTC().Format(time.RFC3339Nano)})
	br.click("#webhook-replay-result .confirm-yes")
	br.waitText("#webhook-replay-result", "replaying from", 30*time.Second)
	eventually(t, 30*time.Second, "the console's replay delivered", func() bool { return len(recv.seqs(a)) == 9 })
	br.submit("webhook-add", map[string]string{"webhook-add-url": "https://hooks.example/second"})
	br.waitText("#webhook-add-result", "whsec_", 30*time.Second)
	br.waitText("#webhooks-table", "https://hooks.example/second", 30*time.Second)
	br.shot("webhooks")
}
