package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	cws "github.com/coder/websocket"

	"github.com/imdhq/imd/clients/go/frame"
	"github.com/imdhq/imd/clients/go/wire"
)

// wsThroughNginx dials wss://api.<domain>/ws through Nginx's public port from localIP.
func wsThroughNginx(t *testing.T, ctx context.Context, ngx *Nginx, localIP, origin string) (*WSConn, *http.Response, error) {
	t.Helper()
	hc := *ngx.HTTPClient(localIP)
	hc.Timeout = 0 // the connection outlives any request timeout; ctx bounds the dial
	c, resp, err := DialWS(ctx, "wss://"+ngx.APIName()+"/ws", &hc, origin)
	if err == nil {
		t.Cleanup(c.Close)
	}
	return c, resp, err
}

// waitWSMessage reads until the MESSAGE push of seq arrives.
func waitWSMessage(t *testing.T, ctx context.Context, c *WSConn, seq int64) wire.Message {
	t.Helper()
	for _, f := range c.Pushes {
		if m, ok := wsMessage(f); ok && m.Seq == seq {
			return m
		}
	}
	for {
		f, err := c.Next(ctx)
		if err != nil {
			t.Fatalf("waiting for MESSAGE seq %d: %v", seq, err)
		}
		if m, ok := wsMessage(f); ok && m.Seq == seq {
			return m
		}
	}
}

func wsMessage(f frame.Frame) (wire.Message, bool) {
	if f.Command != wire.CmdMessage {
		return wire.Message{}, false
	}
	var env struct {
		Data wire.Message `json:"data"`
	}
	if json.Unmarshal(f.Body, &env) != nil {
		return wire.Message{}, false
	}
	return env.Data, true
}

// TestWebSocketThroughNginx: a browser's wss://api.<domain>/ws through the real Nginx (TLS
// terminated there, Upgrade passed on) is a session like a TCP one: it chats with a TCP
// client both ways, is kicked by that device's TCP connection, carries the client's address
// from X-Real-IP, and bad input closes only its own connection.
func TestWebSocketThroughNginx(t *testing.T) {
	RequireNginx(t)
	srv := Start(t, Options{Env: proxiedEnv})
	ngx := StartNginx(t, NginxOptions{Mode: "off", IMDTCP: srv.TCPAddr, IMDHTTP: srv.HTTPAddr})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	fx := newNginxFixture(srv)

	browser, resp, err := wsThroughNginx(t, ctx, ngx, clientIP, "https://"+ngx.APIName())
	if err != nil {
		t.Fatalf("dial wss://%s/ws: %v (%v)", ngx.APIName(), err, resp)
	}
	if got := browser.WS.Subprotocol(); got != "imd.v1" {
		t.Fatalf("subprotocol %q", got)
	}
	if env, err := browser.Call(ctx, wire.CmdAuth, wire.AuthRequest{Token: fx.senderToken, DeviceID: 1}); err != nil || env.Code != 0 {
		t.Fatalf("browser auth: %v %+v", err, env)
	}
	mobile, err := ngx.DialIM(ctx, peerIP)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mobile.Auth(ctx, fx.receiverToken, 1); err != nil {
		t.Fatal(err)
	}

	t.Run("browser to TCP and back", func(t *testing.T) {
		env, err := browser.Call(ctx, wire.CmdSendMessage, textMessage(fx.topic, "ws-"+randomHex(4), "from the browser"))
		if err != nil || env.Code != 0 {
			t.Fatalf("send over WebSocket: %v %+v", err, env)
		}
		var ack wire.SendAck
		if err := json.Unmarshal(env.Data, &ack); err != nil {
			t.Fatal(err)
		}
		if got := waitMessage(t, mobile, ack.Seq, 15*time.Second); got.From != fx.sender || got.MsgID != ack.MsgID {
			t.Fatalf("TCP client got %+v", got)
		}
		back, err := mobile.Send(ctx, textMessage(fx.topic, "tcp-"+randomHex(4), "from the phone"))
		if err != nil {
			t.Fatal(err)
		}
		if got := waitWSMessage(t, ctx, browser, back.Seq); got.From != fx.receiver || got.MsgID != back.MsgID {
			t.Fatalf("browser got %+v", got)
		}
	})

	t.Run("the client's address comes from X-Real-IP", func(t *testing.T) {
		rec, ok := srv.WaitLogRecord(5*time.Second, func(r map[string]any) bool {
			return r["msg"] == "ws request" && fmt.Sprint(r["command"]) == strconv.Itoa(int(wire.CmdSendMessage))
		})
		if !ok || rec["real_ip"] != clientIP || fmt.Sprint(rec["user_id"]) != strconv.FormatInt(fx.sender, 10) {
			t.Fatalf("imd logged the browser's send as %v, want real_ip %s", rec, clientIP)
		}
	})

	t.Run("bad input closes or refuses only its own connection", func(t *testing.T) {
		if _, resp, err := wsThroughNginx(t, ctx, ngx, clientIP, "https://evil.example"); err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
			t.Fatalf("foreign Origin: %v %v, want 403", err, resp)
		}
		bad, _, err := wsThroughNginx(t, ctx, ngx, clientIP, "")
		if err != nil {
			t.Fatal(err)
		}
		if err := bad.WS.Write(ctx, cws.MessageText, []byte(`{"token":"x"}`)); err != nil {
			t.Fatal(err)
		}
		if _, err := bad.Next(ctx); cws.CloseStatus(err) != cws.StatusUnsupportedData {
			t.Fatalf("text message: %v, want close 1003", err)
		}
		if env, err := browser.Call(ctx, wire.CmdHeartbeat, struct{}{}); err != nil || env.Code != 0 {
			t.Fatalf("the browser's own connection suffered: %v %+v", err, env)
		}
	})

	t.Run("the same device on TCP kicks the browser", func(t *testing.T) {
		phone, err := ngx.DialIM(ctx, clientIP)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := phone.Auth(ctx, fx.senderToken, 1); err != nil {
			t.Fatal(err)
		}
		for {
			f, err := browser.Next(ctx)
			if err != nil {
				t.Fatalf("browser closed without a KICK: %v", err)
			}
			if f.Command == wire.CmdKick {
				if string(f.Body) == "" || !json.Valid(f.Body) {
					t.Fatalf("KICK body %q", f.Body)
				}
				break
			}
		}
		if _, err := browser.Next(ctx); cws.CloseStatus(err) != cws.StatusNormalClosure {
			t.Fatalf("after KICK: %v, want a normal close", err)
		}
	})
}
