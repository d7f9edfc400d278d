package bench

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/imdhq/imd/clients/go/frame"
	"github.com/imdhq/imd/clients/go/wire"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/topic"
)

// Faults the fake can inject, each on the message with seq 2 of a topic.
const (
	faultNone      = ""
	faultDuplicate = "duplicate" // push it twice
	faultDrop      = "drop"      // never push it to the first recipient
	faultReorder   = "reorder"   // push it after seq 3
	faultLose      = "lose"      // ACK and push it, but never store it
)

// fakeIMD is just enough of imd for the load generator: the admin calls it
// makes, AUTH, HEARTBEAT, SEND_MESSAGE with pushes to the other members'
// connections, SYNC_MESSAGES and GET_HISTORY.
type fakeIMD struct {
	t     *testing.T
	fault string
	ln    net.Listener
	admin *httptest.Server

	mu      sync.Mutex
	tokens  map[string]int64
	members map[string][]int64
	conns   map[int64][]*fakeConn
	msgs    map[string][]wire.Message
	lastSeq map[string]int64
	held    map[string][]func() // pushes held back by faultReorder, per topic
	senders map[int64]bool      // users that sent a message
	active  month.Month
	sources map[netip.Addr]bool
	pushSeq uint32
	wg      sync.WaitGroup
}

type fakeConn struct {
	nc   net.Conn
	user int64
	wmu  sync.Mutex
}

// fakePageBytes bounds the messages of one fake SYNC_MESSAGES page, so it fits in a frame.
const fakePageBytes = 32 << 10

func startFake(t *testing.T, fault string) *fakeIMD {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeIMD{
		t: t, fault: fault, ln: ln,
		tokens: map[string]int64{}, members: map[string][]int64{}, conns: map[int64][]*fakeConn{},
		msgs: map[string][]wire.Message{}, lastSeq: map[string]int64{}, held: map[string][]func(){}, sources: map[netip.Addr]bool{},
		senders: map[int64]bool{},
		// One month ahead of the clock, so the bench must probe for it.
		active: month.Of(time.Now()).Next(),
	}
	f.admin = httptest.NewServer(f.adminMux())
	f.wg.Go(f.accept)
	t.Cleanup(func() {
		ln.Close()
		f.admin.Close()
		f.mu.Lock()
		for _, cs := range f.conns {
			for _, c := range cs {
				c.nc.Close()
			}
		}
		f.mu.Unlock()
		f.wg.Wait()
	})
	return f
}

func (f *fakeIMD) accept() {
	for {
		nc, err := f.ln.Accept()
		if err != nil {
			return
		}
		f.mu.Lock()
		f.sources[nc.RemoteAddr().(*net.TCPAddr).AddrPort().Addr()] = true
		f.mu.Unlock()
		f.wg.Go(func() { f.serve(&fakeConn{nc: nc}) })
	}
}

func (f *fakeIMD) serve(c *fakeConn) {
	defer c.nc.Close()
	r := bufio.NewReader(c.nc)
	for {
		head, err := r.Peek(frame.HeaderLen)
		if err != nil {
			return
		}
		h, err := frame.ParseHeader(head)
		if err != nil {
			return
		}
		buf := make([]byte, frame.HeaderLen+int(h.BodyLen))
		if _, err := io.ReadFull(r, buf); err != nil {
			return
		}
		fr, _, err := frame.Decode(buf)
		if err != nil {
			return
		}
		f.handle(c, fr)
	}
}

func (c *fakeConn) write(cmd uint16, requestID uint64, seq uint32, body []byte) {
	b, err := frame.Append(nil, cmd, requestID, seq, body, 0)
	if err != nil {
		panic(err)
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.nc.Write(b)
}

func (c *fakeConn) ok(fr frame.Frame, cmd uint16, data any) {
	body, err := wire.OK(fr.RequestID, data)
	if err != nil {
		panic(err)
	}
	c.write(cmd, fr.RequestID, fr.SequenceID, body)
}

func (c *fakeConn) fail(fr frame.Frame, code int) {
	c.write(wire.ResponseCommand(fr.Command), fr.RequestID, fr.SequenceID, wire.Err(fr.RequestID, code, "fake says no"))
}

func (f *fakeIMD) handle(c *fakeConn, fr frame.Frame) {
	switch fr.Command {
	case wire.CmdAuth:
		var req wire.AuthRequest
		json.Unmarshal(fr.Body, &req)
		f.mu.Lock()
		user, ok := f.tokens[req.Token]
		if ok {
			c.user = user
			f.conns[user] = append(f.conns[user], c)
		}
		f.mu.Unlock()
		if !ok {
			c.fail(fr, wire.CodeUnauthenticated)
			return
		}
		c.ok(fr, wire.CmdAuth, wire.AuthResponse{UserID: user, TenantID: "t", DeviceID: req.DeviceID})
	case wire.CmdHeartbeat:
		c.ok(fr, wire.CmdHeartbeat, wire.HeartbeatResponse{ServerTime: time.Now().UnixMilli()})
	case wire.CmdSendMessage:
		f.send(c, fr)
	case wire.CmdSyncMessages:
		var req wire.SyncMessagesRequest
		json.Unmarshal(fr.Body, &req)
		f.mu.Lock()
		var page []wire.Message
		all := f.msgs[req.Topic]
		bytes := 0
		for _, m := range all {
			// Pages stay well under a frame, as imd's do.
			if m.Seq > req.SinceSeq && len(page) < req.Limit && bytes < fakePageBytes {
				page = append(page, m)
				bytes += len(m.Content) + len(m.ClientMsgID) + len(m.Topic) + 128
			}
		}
		var last int64
		if len(all) > 0 {
			last = all[len(all)-1].Seq
		}
		f.mu.Unlock()
		more := len(page) > 0 && page[len(page)-1].Seq < last
		c.ok(fr, wire.CmdSyncMessages, wire.SyncMessagesPage{Messages: page})
		c.ok(fr, wire.CmdSyncMessagesFinish, wire.SyncMessagesFinish{Topic: req.Topic, LastSeq: last, HasMore: more})
	case wire.CmdGetHistory:
		var req wire.GetHistoryRequest
		json.Unmarshal(fr.Body, &req)
		f.mu.Lock()
		var page []wire.Message
		all := f.msgs[req.Topic]
		for i := len(all) - 1; i >= 0 && len(page) < req.Limit; i-- {
			if req.BeforeSeq == 0 || all[i].Seq < req.BeforeSeq {
				page = append(page, all[i])
			}
		}
		f.mu.Unlock()
		c.ok(fr, wire.CmdGetHistory, wire.GetHistoryResponse{Messages: page})
	}
}

// send stores a message, ACKs it and pushes it to every other connection
// of the topic's members, faults included.
func (f *fakeIMD) send(c *fakeConn, fr frame.Frame) {
	var req wire.SendMessageRequest
	json.Unmarshal(fr.Body, &req)
	f.mu.Lock()
	defer f.mu.Unlock()
	if !memberOf(f.members[req.Topic], c.user) {
		c.fail(fr, wire.CodeForbidden)
		return
	}
	f.senders[c.user] = true
	f.lastSeq[req.Topic]++
	seq := f.lastSeq[req.Topic]
	m := wire.Message{Topic: req.Topic, Seq: seq, MsgID: seq * 1000, From: c.user, ClientMsgID: req.ClientMsgID,
		Type: req.Type, Content: req.Content, Status: wire.StatusNormal}
	if f.fault != faultLose || seq != 2 {
		f.msgs[req.Topic] = append(f.msgs[req.Topic], m)
	}
	c.ok(fr, wire.CmdSendAck, wire.SendAck{MsgID: m.MsgID, Seq: seq, Topic: req.Topic, ClientMsgID: req.ClientMsgID})

	var pushes []func()
	first := true
	for _, user := range f.members[req.Topic] {
		for _, to := range f.conns[user] {
			if to == c {
				continue
			}
			push := func() {
				f.pushSeq++
				body, _ := wire.OK(0, m)
				to.write(wire.CmdMessage, 0, f.pushSeq, body)
			}
			switch {
			case seq == 2 && f.fault == faultDuplicate:
				pushes = append(pushes, push, push)
			case seq == 2 && f.fault == faultDrop && first:
			default:
				pushes = append(pushes, push)
			}
			first = false
		}
	}
	if f.fault == faultReorder && seq == 2 {
		f.held[req.Topic] = pushes
		return
	}
	for _, p := range pushes {
		p()
	}
	if f.fault == faultReorder && seq == 3 {
		for _, p := range f.held[req.Topic] {
			p()
		}
	}
}

func memberOf(members []int64, user int64) bool {
	for _, m := range members {
		if m == user {
			return true
		}
	}
	return false
}

func (f *fakeIMD) adminMux() *http.ServeMux {
	mux := http.NewServeMux()
	const prefix = "POST /admin/v1/tenants/{tenant}"
	reply := func(w http.ResponseWriter, status int, v any) {
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(v)
	}
	mux.HandleFunc(prefix+"/users", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			UserID int64 `json:"user_id"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		reply(w, 200, req)
	})
	mux.HandleFunc(prefix+"/tokens", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			UserID int64 `json:"user_id"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		tok := "tok-" + strconv.FormatInt(req.UserID, 10)
		f.mu.Lock()
		f.tokens[tok] = req.UserID
		f.mu.Unlock()
		reply(w, 200, map[string]string{"token": tok})
	})
	mux.HandleFunc(prefix+"/friendships", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			A int64 `json:"user_a"`
			B int64 `json:"user_b"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		f.mu.Lock()
		f.members[topic.ForPair(req.A, req.B)] = []int64{req.A, req.B}
		f.mu.Unlock()
		reply(w, 200, struct{}{})
	})
	mux.HandleFunc(prefix+"/groups", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			GroupID int64   `json:"group_id"`
			Owner   int64   `json:"owner"`
			Members []int64 `json:"members"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		name := topic.ForGroup(req.GroupID)
		f.mu.Lock()
		f.members[name] = append([]int64{req.Owner}, req.Members...)
		f.mu.Unlock()
		reply(w, 200, map[string]any{"group_id": req.GroupID, "topic": name, "conversation_id": req.GroupID + 7})
	})
	mux.HandleFunc(prefix+"/shards/advance", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Month string `json:"month"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		m, err := month.Parse(req.Month)
		f.mu.Lock()
		defer f.mu.Unlock()
		if err != nil || m < f.active {
			reply(w, 400, map[string]any{"code": 40001, "msg": "month is before the active month"})
			return
		}
		f.active = m
		reply(w, 200, map[string]string{"active_month": m.String()})
	})
	return mux
}

// sourceIPs lists the addresses connections came from.
func (f *fakeIMD) sourceIPs() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for a := range f.sources {
		out = append(out, a.String())
	}
	slices.Sort(out)
	return out
}
