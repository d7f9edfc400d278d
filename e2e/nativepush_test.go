package e2e

// Native push (issue 32 part 1) through the real binary, against the local APNs and FCM
// (adapters/apns/apnstest, adapters/fcm/fcmtest) that verify the provider token, the OAuth
// grant and the payload as the real ones do: a message to a group turns into exactly one
// request per offline device's token, with the user's unread total as badge; a device that
// took the message live and acknowledged it gets none; a token APNs answers 410 for is
// removed; a connected device that never acknowledges gets the alert once push.ack_wait ends.

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/apns/apnstest"
	"github.com/imdhq/imd/adapters/fcm/fcmtest"
	"github.com/imdhq/imd/clients/go/wire"
)

const (
	apnsOffline = "1111111111111111111111111111111111111111111111111111111111111111"
	apnsOnline  = "2222222222222222222222222222222222222222222222222222222222222222"
	apnsGone    = "3333333333333333333333333333333333333333333333333333333333333333"
	fcmOffline  = "fcm-token-offline"
	apnsAcker   = "4444444444444444444444444444444444444444444444444444444444444444"
	apnsSilent  = "5555555555555555555555555555555555555555555555555555555555555555"
)

// pushTokenCall sends a push-token request as the user and returns its status.
func pushTokenCall(t *testing.T, srv *Server, bearer, method, query string, body any) int {
	t.Helper()
	raw, _ := json.Marshal(body)
	req, err := http.NewRequest(method, "http://"+srv.HTTPAddr+"/api/v1/push-tokens"+query, bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+bearer)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s push-tokens: %v", method, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestNativePushReachesOfflineDevicesOnly(t *testing.T) {
	apns, err := apnstest.New()
	if err != nil {
		t.Fatal(err)
	}
	defer apns.Close()
	fcm, err := fcmtest.New()
	if err != nil {
		t.Fatal(err)
	}
	defer fcm.Close()
	apns.Unregister(apnsGone)

	srv := Start(t, Options{Env: nativePushEnv(t, apns, fcm, nil)})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	const sender, iphone, android, online, gone, otherApp = 3201, 3202, 3203, 3204, 3205, 3206
	ts := srv.User(sender)
	tokens := map[int64]string{}
	register := map[int64]map[string]any{
		iphone:  {"device_id": "iphone", "platform": "apns", "app_id": apnstest.Topic, "token": apnsOffline, "locale": "en-US"},
		android: {"device_id": "pixel", "platform": "fcm", "app_id": fcmtest.Project, "token": fcmOffline},
		gone:    {"device_id": "old", "platform": "apns", "app_id": apnstest.Topic, "token": apnsGone},
		// APNs refuses a topic the key's team has no app for (400 BadTopic): final, a dead letter.
		otherApp: {"device_id": "ipad", "platform": "apns", "app_id": "com.other.app", "token": apnsOnline},
	}
	for u, body := range register {
		tokens[u] = srv.User(u)
		if code := pushTokenCall(t, srv, tokens[u], http.MethodPut, "", body); code != http.StatusOK {
			t.Fatalf("PUT push token of %d: HTTP %d", u, code)
		}
	}
	if code := pushTokenCall(t, srv, tokens[iphone], http.MethodPut, "", map[string]any{"device_id": "x", "platform": "sms", "app_id": "a", "token": "t"}); code != http.StatusBadRequest {
		t.Fatalf("PUT of a bad platform: HTTP %d, want 400", code)
	}
	tokens[online] = srv.User(online)
	group := srv.Group(3201, sender, iphone, android, online, gone, otherApp)
	a := srv.Connect(ctx, ts, 1)
	o := srv.Connect(ctx, tokens[online], 1) // takes the message live (the Go client acknowledges it)
	// The online user's phone registers over the frame (PUSH_TOKEN_SET), with the same parser.
	want := wire.PushToken{DeviceID: "iphone", Platform: wire.PlatformAPNs, AppID: apnstest.Topic, Token: apnsOnline}
	if got, err := o.SetPushToken(ctx, want); err != nil || got != want {
		t.Fatalf("PUSH_TOKEN_SET = %+v, %v; want %+v", got, err, want)
	}
	if _, err := o.SetPushToken(ctx, wire.PushToken{DeviceID: "iphone", Platform: "sms", AppID: "a", Token: "t"}); !isCode(err, wire.CodeInvalidArgument) {
		t.Fatalf("PUSH_TOKEN_SET of a bad platform: %v; want 40001", err)
	}

	var ack wire.SendAck
	rises(t, srv, func() {
		var err error
		ack, err = a.Send(ctx, wire.SendMessageRequest{Topic: group, ClientMsgID: "np-1", Type: "text", Content: json.RawMessage(`{"text":"hello"}`)})
		if err != nil {
			t.Fatalf("send: %v", err)
		}
		eventually(t, 20*time.Second, "one alert at each provider", func() bool { return len(apns.Accepted()) >= 1 && len(fcm.Accepted()) >= 1 })
	}, metric("push_send_total", "provider", "apns", "result", "ok"), metric("push_send_total", "provider", "fcm", "result", "ok"),
		metric("push_send_total", "provider", "apns", "result", "invalid"), metric("push_send_total", "provider", "apns", "result", "dead"))
	time.Sleep(time.Second) // room for a request that should not come
	ap, fc := apns.Accepted(), fcm.Accepted()
	if len(ap) != 1 || ap[0].Token != apnsOffline {
		t.Fatalf("APNs got %+v; want one request, for the offline iPhone", ap)
	}
	aps, _ := ap[0].Payload["aps"].(map[string]any)
	alert, _ := aps["alert"].(map[string]any)
	if aps["badge"] != float64(1) || alert["body"] != "hello" || ap[0].CollapseID != "c"+jsonNumber(ack.ConversationID) {
		t.Fatalf("APNs payload %+v, collapse %q; want badge 1, body hello, collapse per conversation", ap[0].Payload, ap[0].CollapseID)
	}
	if len(fc) != 1 || fc[0].Token != fcmOffline || fc[0].Badge != 1 || fc[0].Body != "hello" {
		t.Fatalf("FCM got %+v; want one request with badge 1", fc)
	}
	var dead struct {
		DeadLetters []struct {
			UserID    int64  `json:"user_id"`
			DeviceID  string `json:"device_id"`
			MsgID     int64  `json:"msg_id"`
			LastError string `json:"last_error"`
		} `json:"dead_letters"`
	}
	srv.MustAdmin("GET", "/push/dead_letters?provider=apns", nil, &dead)
	if d := dead.DeadLetters; len(d) != 1 || d[0].UserID != otherApp || d[0].DeviceID != "ipad" || d[0].MsgID != ack.MsgID || !strings.Contains(d[0].LastError, "BadTopic") {
		t.Fatalf("APNs dead letters %+v; want the BadTopic alert of %d", d, otherApp)
	}

	// The operator sees the counters and the dead letter on the console's Push page.
	br := signedInConsole(t, srv)
	br.open("push", "#push-dead-table tbody tr")
	br.waitText("#push-metrics", `result="dead"`, 30*time.Second)
	br.waitText("#push-dead-table", "BadTopic", 30*time.Second)
	br.shot("push")

	// The 410 token is gone: deleting it finds nothing.
	if code := pushTokenCall(t, srv, tokens[gone], http.MethodDelete, "?device_id=old", nil); code != http.StatusNotFound {
		t.Fatalf("DELETE of the token APNs called unregistered: HTTP %d, want 404 (removed)", code)
	}
	for i, wantCode := range []int{0, wire.CodeNotFound} {
		if err := o.DeletePushToken(ctx, "iphone"); (wantCode == 0 && err != nil) || (wantCode != 0 && !isCode(err, wantCode)) {
			t.Fatalf("PUSH_TOKEN_DELETE #%d: %v; want code %d", i+1, err, wantCode)
		}
	}
	if code := pushTokenCall(t, srv, tokens[iphone], http.MethodDelete, "?device_id=iphone", nil); code != http.StatusOK {
		t.Fatalf("DELETE of a registered token: HTTP %d, want 200", code)
	}
}

// nativePushEnv points imd at the local APNs and, when fcm is set, FCM, with extra on top.
func nativePushEnv(t *testing.T, apns *apnstest.Server, fcm *fcmtest.Server, extra map[string]string) map[string]string {
	t.Helper()
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	roots := apns.CertPEM()
	env := map[string]string{
		"IMD_PUSH_APNS_KEY_FILE": write("apns.p8", apns.KeyPEM()), "IMD_PUSH_APNS_KEY_ID": apnstest.KeyID,
		"IMD_PUSH_APNS_TEAM_ID": apnstest.TeamID, "IMD_PUSH_APNS_HOST": apns.URL,
		"IMD_PUSH_BACKOFF": "100ms",
	}
	if fcm != nil {
		env["IMD_PUSH_FCM_CREDENTIALS_FILE"] = write("fcm.json", fcm.ServiceAccountJSON())
		env["IMD_PUSH_FCM_ENDPOINT"] = fcm.URL
		roots = append(roots, fcm.CertPEM()...)
	}
	// The fakes' certificate is the roots imd trusts, as an operator's CA bundle would be.
	env["SSL_CERT_FILE"] = write("roots.pem", roots)
	maps.Copy(env, extra)
	return env
}

// TestNativePushWhenNoDeviceAcked (issue 32: "sent only when no device of the user took the
// live push"; tinode/chat#685): two members of a group are connected when a message comes.
// One device acknowledges it (the Go client's PUSH_ACK); the other, a backgrounded phone,
// never does. Once push.ack_wait has passed, the silent one's phone gets the APNs alert an
// offline user would, with the badge and collapse id; the acking one's gets nothing. A third,
// silent member with no push token gets no wait at all (DESIGN issue-32 "Native push").
func TestNativePushWhenNoDeviceAcked(t *testing.T) {
	apns, err := apnstest.New()
	if err != nil {
		t.Fatal(err)
	}
	defer apns.Close()
	srv := Start(t, Options{Env: nativePushEnv(t, apns, nil, map[string]string{"IMD_PUSH_ACK_WAIT": "1s"})})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	const sender, acker, silent, tokenless = 3301, 3302, 3303, 3304
	tokens := map[int64]string{sender: srv.User(sender), acker: srv.User(acker), silent: srv.User(silent), tokenless: srv.User(tokenless)}
	for u, tok := range map[int64]string{acker: apnsAcker, silent: apnsSilent} {
		body := map[string]any{"device_id": "phone", "platform": "apns", "app_id": apnstest.Topic, "token": tok}
		if code := pushTokenCall(t, srv, tokens[u], http.MethodPut, "", body); code != http.StatusOK {
			t.Fatalf("PUT push token of %d: HTTP %d", u, code)
		}
	}
	group := srv.Group(3301, sender, acker, silent, tokenless)
	a := srv.Connect(ctx, tokens[sender], 1)
	srv.Connect(ctx, tokens[acker], 1) // acknowledges every MESSAGE
	// The silent phone authenticates, then never reads nor acknowledges a push.
	dialStuck(t, srv, tokens[silent], 1)
	// So does a member with no push token: no alert can reach them, so they get no wait.
	dialStuck(t, srv, tokens[tokenless], 1)
	waits := func() float64 {
		var n float64
		for _, r := range []string{"alerted", "acked", "dropped", "failed", "told"} {
			n += srv.metricValue("push_ack_wait_total", "result", r)
		}
		return n
	}
	waitsBefore := waits()

	var ack wire.SendAck
	var took time.Duration
	rises(t, srv, func() {
		start := time.Now()
		if ack, err = a.Send(ctx, textMessage(group, "aw-1", "are you there?")); err != nil {
			t.Fatalf("send: %v", err)
		}
		eventually(t, 15*time.Second, "an APNs alert after the ack wait", func() bool { return len(apns.Accepted()) >= 1 })
		took = time.Since(start)
	}, metric("push_ack_wait_total", "result", "alerted"), metric("push_ack_wait_total", "result", "acked"),
		metric("push_send_total", "provider", "apns", "result", "ok"))
	// Not before the wait (1s), and soon after it: the check runs a tenth of the wait apart.
	if took < time.Second {
		t.Fatalf("the alert came %v after the send, before the ack wait ended", took)
	}
	t.Logf("send to APNs alert: %v (push.ack_wait 1s)", took)
	time.Sleep(1500 * time.Millisecond) // room for an alert that should not come
	ap := apns.Accepted()
	if len(ap) != 1 || ap[0].Token != apnsSilent {
		t.Fatalf("APNs got %+v; want one request, for the silent phone", ap)
	}
	if n := waits() - waitsBefore; n != 2 {
		t.Fatalf("%v ack waits ended; want 2, the token holders' (none for the token-less member)", n)
	}
	aps, _ := ap[0].Payload["aps"].(map[string]any)
	alert, _ := aps["alert"].(map[string]any)
	if aps["badge"] != float64(1) || alert["body"] != "are you there?" || ap[0].CollapseID != "c"+jsonNumber(ack.ConversationID) {
		t.Fatalf("APNs payload %+v, collapse %q; want badge 1, the text, collapse per conversation", ap[0].Payload, ap[0].CollapseID)
	}
}

func jsonNumber(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}
