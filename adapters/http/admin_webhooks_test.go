package http

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/memory"
	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/webhook"
	"github.com/imdhq/imd/core/usecase/webhooks"
)

// TestAdminWebhooksShowTheSecretOnlyWhenMade walks the endpoint routes and checks that a
// secret is in the answers of the create and the rotation and in no other.
func TestAdminWebhooksShowTheSecretOnlyWhenMade(t *testing.T) {
	clock := memory.NewClock(time.Date(2030, 2, 3, 4, 5, 6, 0, time.UTC))
	cursors := memory.NewWebhookCursors()
	svc := webhooks.New(webhooks.Deps{Store: memory.NewWebhookEndpoints(), Cursors: cursors, Locks: memory.NewLocks(clock.Now),
		IDs: memory.NewIDs(clock), Clock: clock})
	h := newHarness(t, Config{AdminKey: adminKey}, Deps{Webhooks: svc})
	const base = "/admin/v1/tenants/default/webhooks"
	decode := func(body string) webhookJSON {
		t.Helper()
		var w webhookJSON
		if err := json.Unmarshal([]byte(body), &w); err != nil {
			t.Fatalf("answer %s: %v", body, err)
		}
		return w
	}

	rec := h.do("POST", base, `{"url":"https://hooks.example/in","events":["message.created"]}`)
	if rec.Code != http.StatusOK {
		t.Fatalf("create = %d %s", rec.Code, rec.Body)
	}
	made := decode(rec.Body.String())
	if !strings.HasPrefix(made.Secret, "whsec_") || !made.Enabled || made.ID == 0 {
		t.Fatalf("create = %+v: want a secret, enabled by default", made)
	}
	one := fmt.Sprintf("%s/%d", base, made.ID)

	reads := []struct{ method, path, body string }{
		{"GET", base, ""},
		{"GET", one, ""},
		{"PUT", one, `{"url":"https://hooks.example/v2","events":["report.filed"],"enabled":false}`},
	}
	for _, r := range reads {
		rec := h.do(r.method, r.path, r.body)
		if rec.Code != http.StatusOK || strings.Contains(rec.Body.String(), "whsec_") || strings.Contains(rec.Body.String(), `"secret"`) {
			t.Fatalf("%s %s = %d %s: want 200 without the secret", r.method, r.path, rec.Code, rec.Body)
		}
	}
	rec = h.do("GET", one, "")
	if got := decode(rec.Body.String()); got.URL != "https://hooks.example/v2" || got.Enabled || len(got.Events) != 1 || got.Events[0] != "report.filed" {
		t.Fatalf("GET after PUT = %+v", got)
	}

	rec = h.do("POST", one+"/secret", "")
	if rot := decode(rec.Body.String()); rec.Code != http.StatusOK || !strings.HasPrefix(rot.Secret, "whsec_") || rot.Secret == made.Secret {
		t.Fatalf("rotate = %d %s", rec.Code, rec.Body)
	}

	dead := webhook.DeadLetter{EndpointID: made.ID, Topic: "grp_1", Seq: 4, Type: webhook.MessageCreated, Attempts: 8, LastError: "status 500", At: clock.Now()}
	if err := cursors.AddDeadLetter(t.Context(), "default", dead); err != nil {
		t.Fatal(err)
	}
	rec = h.do("GET", one+"/dead_letters?limit=10", "")
	if want := `{"dead_letters":[{"topic":"grp_1","seq":4,"type":"message.created","attempts":8,"last_error":"status 500","at":1896321906000}]}` + "\n"; rec.Code != http.StatusOK || rec.Body.String() != want {
		t.Fatalf("dead letters = %d %s, want %s", rec.Code, rec.Body, want)
	}

	if rec := h.do("POST", one+"/replay", `{"since":1896321906000}`); rec.Code != http.StatusOK {
		t.Fatalf("replay = %d %s", rec.Code, rec.Body)
	}
	if sc, _, _ := cursors.ScanMark(t.Context(), "default", made.ID); !sc.ReplayFrom.Equal(clock.Now()) {
		t.Fatalf("replay point %v, want %v", sc.ReplayFrom, clock.Now())
	}

	refused := []struct{ method, path, body string }{
		{"POST", base, `{"url":"ftp://hooks.example/in","events":["message.created"]}`},
		{"POST", base, `{"url":"https://hooks.example/in","events":["nope"]}`},
		{"PUT", one, `{"url":"https://hooks.example/in","events":[]}`},
		{"GET", base + "/x", ""},
		{"GET", one + "/dead_letters?limit=101", ""},
		{"POST", one + "/replay", `{"since":1896321907000}`}, // in the future
		{"POST", one + "/replay", `{}`},                      // not "from the beginning"
		{"POST", one + "/replay", `{"since":0}`},
		{"POST", one + "/replay", `{"since":946684799999}`}, // 1999-12-31, before any month kept
	}
	for _, r := range refused {
		wantError(t, h.do(r.method, r.path, r.body), http.StatusBadRequest, apperr.InvalidArgument)
	}

	if rec := h.do("DELETE", one, ""); rec.Code != http.StatusOK {
		t.Fatalf("delete = %d %s", rec.Code, rec.Body)
	}
	gone := []struct{ method, path, body string }{
		{"GET", one, ""}, {"DELETE", one, ""}, {"GET", one + "/dead_letters", ""}, {"POST", one + "/replay", `{"since":0}`},
	}
	for _, r := range gone {
		wantError(t, h.do(r.method, r.path, r.body), http.StatusNotFound, apperr.NotFound)
	}

	off := newHarness(t, Config{AdminKey: adminKey}, Deps{})
	wantError(t, off.do("GET", base, ""), http.StatusServiceUnavailable, apperr.Busy)
}
