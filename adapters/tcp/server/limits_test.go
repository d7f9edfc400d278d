package server

import (
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/protocol/ratelimit"
	"github.com/imdhq/imd/clients/go/frame"
	"github.com/imdhq/imd/clients/go/proxyheader"
	"github.com/imdhq/imd/clients/go/wire"
)

func perMinute(n int) ratelimit.Rate { return ratelimit.Rate{Count: n, Per: time.Minute} }

// Every limited command is refused with 42901 on its response command once its device
// budget is spent, from the very first request on; other budgets are unaffected.
func TestDeviceRateLimits(t *testing.T) {
	sendBody := func(i int) any {
		return wire.SendMessageRequest{Topic: groupTopic, ClientMsgID: "rl" + strconv.Itoa(i), Type: "text", Content: text("x")}
	}
	tests := []struct {
		name     string
		budgets  Budgets
		cmd      uint16
		body     func(i int) any
		wantCmd  uint16
		budget   int
		preAuth  bool // sent before AUTH (only AUTH itself)
		badToken bool
	}{
		{"auth", Budgets{Auth: perMinute(2)}, wire.CmdAuth, func(int) any { return wire.AuthRequest{Token: "bad", DeviceID: 1} },
			wire.CmdAuth, 2, true, true},
		{"send", Budgets{Send: perMinute(3)}, wire.CmdSendMessage, sendBody, wire.CmdSendAck, 3, false, false},
		{"sync inbox", Budgets{SyncInbox: perMinute(2)}, wire.CmdSyncInbox, func(int) any { return struct{}{} },
			wire.CmdSyncInboxFinish, 2, false, false},
		{"history", Budgets{History: perMinute(2)}, wire.CmdGetHistory, func(int) any { return wire.GetHistoryRequest{Topic: groupTopic} },
			wire.CmdGetHistory, 2, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := newStack(t)
			h := start(t, Config{RateLimits: RateLimits{Device: tt.budgets}}, st.deps)
			c := h.dial(t)
			if !tt.preAuth {
				c.auth(1, 1)
			}
			for i := range tt.budget {
				f, env := c.call(tt.cmd, tt.body(i))
				if f.Command != tt.wantCmd || env.Code == wire.CodeRateLimited {
					t.Fatalf("request %d within budget: command %d code %d %q", i, f.Command, env.Code, env.Msg)
				}
			}
			f, env := c.call(tt.cmd, tt.body(tt.budget))
			if f.Command != tt.wantCmd || env.Code != wire.CodeRateLimited || string(env.Data) != "null" {
				t.Fatalf("request over budget: command %d code %d data %s, want command %d code 42901", f.Command, env.Code, env.Data, tt.wantCmd)
			}
			if got := h.metrics.count("tcp_rate_limited_total"); got != 1 {
				t.Fatalf("tcp_rate_limited_total %v, want 1", got)
			}
			// HEARTBEAT spends no budget.
			if _, env := c.call(wire.CmdHeartbeat, struct{}{}); env.Code != wire.CodeOK {
				t.Fatalf("heartbeat code %d", env.Code)
			}
			// A fresh connection of the same device starts with a fresh budget, as long as
			// the address has room.
			if !tt.preAuth {
				other := h.dial(t)
				other.auth(1, 2)
				if _, env := other.call(tt.cmd, tt.body(100)); env.Code == wire.CodeRateLimited {
					t.Fatal("another connection was charged for this one's requests")
				}
			}
		})
	}
}

// SYNC_MESSAGES is a stream: a refusal is its FINISH frame alone.
func TestSyncMessagesRateLimit(t *testing.T) {
	st := newStack(t)
	h := start(t, Config{RateLimits: RateLimits{Device: Budgets{SyncMessages: perMinute(1)}}}, st.deps)
	c := h.dial(t)
	c.auth(2, 1)
	if _, _, env := syncAll(t, c, wire.SyncMessagesRequest{Topic: groupTopic}); env.Code != wire.CodeOK {
		t.Fatalf("first sync code %d", env.Code)
	}
	if _, _, env := syncAll(t, c, wire.SyncMessagesRequest{Topic: groupTopic}); env.Code != wire.CodeRateLimited {
		t.Fatalf("second sync code %d, want 42901", env.Code)
	}
}

// Connections from one client address share its IP budget; other addresses have their own.
func TestIPRateLimitIsShared(t *testing.T) {
	h := start(t, Config{ProxyProtocol: true, RateLimits: RateLimits{IP: Budgets{Auth: perMinute(3)}}}, Deps{})
	via := func(ip string) *rawClient {
		c := h.dial(t)
		c.write(proxyheader.AppendV1(nil, netip.AddrPortFrom(netip.MustParseAddr(ip), 1000), netip.MustParseAddrPort("127.0.0.1:9000")))
		return c
	}
	badAuth := func(c *rawClient) int {
		_, env := c.call(wire.CmdAuth, wire.AuthRequest{Token: "bad", DeviceID: 1})
		return env.Code
	}
	a, b := via("203.0.113.5"), via("203.0.113.5")
	for i, c := range []*rawClient{a, b, a} {
		if code := badAuth(c); code != wire.CodeUnauthenticated {
			t.Fatalf("attempt %d: code %d, want 40101", i, code)
		}
	}
	if code := badAuth(b); code != wire.CodeRateLimited {
		t.Fatalf("fourth attempt from the address: code %d, want 42901", code)
	}
	if code := badAuth(via("203.0.113.6")); code != wire.CodeUnauthenticated {
		t.Fatalf("another address: code %d, want 40101", code)
	}
	if code := badAuth(via("2001:db8:1:2::9")); code != wire.CodeUnauthenticated {
		t.Fatalf("IPv6 address: code %d", code)
	}
}

// Many sends at once: at most the budget is admitted, the rest is refused, nothing queues.
func TestSendBurst(t *testing.T) {
	st := newStack(t)
	h := start(t, Config{RateLimits: RateLimits{Device: Budgets{Send: ratelimit.Rate{Count: 20, Per: time.Second}}}}, st.deps)
	c := h.dial(t)
	c.auth(1, 1)
	var burst []byte
	for i := range 30 {
		body := []byte(`{"topic":"` + groupTopic + `","client_msg_id":"b` + strconv.Itoa(i) + `","type":"text","content":{"t":1}}`)
		var err error
		if burst, err = frame.Append(burst, wire.CmdSendMessage, uint64(i+1), uint32(i+1), body, 0); err != nil {
			t.Fatal(err)
		}
	}
	c.write(burst)
	codes := map[int]int{}
	for range 30 {
		f := c.read()
		if f.Command != wire.CmdSendAck {
			t.Fatalf("command %d, want SEND_ACK", f.Command)
		}
		codes[envelope(t, f).Code]++
	}
	if codes[wire.CodeOK] != 20 || codes[wire.CodeRateLimited] != 10 {
		t.Fatalf("answers %v, want 20 ok and 10 rate limited", codes)
	}
}
