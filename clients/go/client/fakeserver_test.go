package client

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/imdhq/imd/clients/go/frame"
	"github.com/imdhq/imd/clients/go/wire"
)

// fakeServer is a minimal imd stand-in: it reads an optional PROXY header, an
// optional TLS layer, then frames, and hands each frame to handle.
type fakeServer struct {
	t      *testing.T
	ln     net.Listener
	proxy  bool
	tls    *tls.Config
	handle func(s *session, f frame.Frame)

	sessions chan *session
	wg       sync.WaitGroup
}

// session is the server side of one connection.
type session struct {
	t           *testing.T
	conn        net.Conn
	proxyHeader []byte // as the client sent it
	wmu         sync.Mutex
	// frames receives every frame the default handler does not answer
	// (PUSH_ACK, unknown commands) and readErr the error that ended reading.
	frames  chan frame.Frame
	readErr chan error
}

type serverOption func(*fakeServer)

func withProxy() serverOption { return func(s *fakeServer) { s.proxy = true } }

func withTLS(cfg *tls.Config) serverOption { return func(s *fakeServer) { s.tls = cfg } }

func withHandler(h func(s *session, f frame.Frame)) serverOption {
	return func(s *fakeServer) { s.handle = h }
}

func startServer(t *testing.T, network, addr string, opts ...serverOption) *fakeServer {
	t.Helper()
	ln, err := net.Listen(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	s := &fakeServer{t: t, ln: ln, handle: defaultHandler, sessions: make(chan *session, 16)}
	for _, o := range opts {
		o(s)
	}
	s.wg.Add(1)
	go s.acceptLoop()
	t.Cleanup(func() {
		ln.Close()
		s.wg.Wait()
	})
	return s
}

// addr is the Options.Addr of the server.
func (s *fakeServer) addr() string {
	if s.ln.Addr().Network() == "unix" {
		return unixPrefix + s.ln.Addr().String()
	}
	return s.ln.Addr().String()
}

// nextSession waits for the server side of the next connection.
func (s *fakeServer) nextSession() *session {
	s.t.Helper()
	select {
	case ss := <-s.sessions:
		return ss
	case <-time.After(5 * time.Second):
		s.t.Fatal("no connection reached the server")
		return nil
	}
}

func (s *fakeServer) acceptLoop() {
	defer s.wg.Done()
	for {
		conn, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer conn.Close()
			s.serve(conn)
		}()
	}
}

func (s *fakeServer) serve(conn net.Conn) {
	ss := &session{t: s.t, conn: conn, frames: make(chan frame.Frame, 64), readErr: make(chan error, 1)}
	var rest []byte
	if s.proxy {
		header, leftover, err := readProxyHeader(conn)
		if err != nil {
			ss.readErr <- err
			s.sessions <- ss
			return
		}
		ss.proxyHeader, rest = header, leftover
	}
	ss.conn = &prefixConn{Conn: conn, prefix: rest}
	if s.tls != nil {
		tc := tls.Server(ss.conn, s.tls)
		if err := tc.Handshake(); err != nil {
			ss.readErr <- err
			s.sessions <- ss
			return
		}
		ss.conn = tc
	}
	s.sessions <- ss
	ss.readErr <- ss.readFrames(s.handle)
}

// readProxyHeader returns the PROXY header at the start of conn, cut by its length
// only: the test compares it byte for byte with what proxyheader writes, and the
// server's proxyhdr tests parse that with an independent reader.
func readProxyHeader(conn net.Conn) (header, rest []byte, err error) {
	br := bufio.NewReader(conn)
	first, err := br.Peek(v2FixedLen)
	if err != nil {
		return nil, nil, err
	}
	if string(first[:len(v2Signature)]) == v2Signature {
		header = make([]byte, v2FixedLen+int(binary.BigEndian.Uint16(first[14:])))
		_, err = io.ReadFull(br, header)
	} else {
		header, err = br.ReadBytes('\n')
	}
	if err != nil {
		return nil, nil, err
	}
	rest, _ = br.Peek(br.Buffered())
	return header, rest, nil
}

// v2Signature and v2FixedLen: a v2 header is the signature, version/command,
// family and a 16-bit length of the addresses that follow.
const (
	v2Signature = "\r\n\r\n\x00\r\nQUIT\n"
	v2FixedLen  = 16
)

// prefixConn replays bytes read past the PROXY header before reading on.
type prefixConn struct {
	net.Conn
	prefix []byte
}

func (p *prefixConn) Read(b []byte) (int, error) {
	if len(p.prefix) > 0 {
		n := copy(b, p.prefix)
		p.prefix = p.prefix[n:]
		return n, nil
	}
	return p.Conn.Read(b)
}

func (ss *session) readFrames(handle func(*session, frame.Frame)) error {
	var buf []byte
	chunk := make([]byte, 8192)
	for {
		for {
			f, n, err := frame.Decode(buf)
			if errors.Is(err, frame.ErrIncomplete) {
				break
			}
			if err != nil {
				return err
			}
			buf = buf[n:]
			handle(ss, f)
		}
		m, err := ss.conn.Read(chunk)
		if err != nil {
			return err
		}
		buf = append(buf, chunk[:m]...)
	}
}

// send writes one frame; compressMin as in frame.Append.
func (ss *session) send(cmd uint16, requestID uint64, seq uint32, body []byte, compressMin int) {
	ss.wmu.Lock()
	defer ss.wmu.Unlock()
	b, err := frame.Append(nil, cmd, requestID, seq, body, compressMin)
	if err != nil {
		ss.t.Errorf("server encode: %v", err)
		return
	}
	ss.conn.Write(b) // a write error shows up as a failed client call
}

// ok answers f with a success envelope on command cmd.
func (ss *session) ok(f frame.Frame, cmd uint16, data any) {
	body, err := wire.OK(f.RequestID, data)
	if err != nil {
		ss.t.Errorf("server marshal: %v", err)
		return
	}
	ss.send(cmd, f.RequestID, f.SequenceID, body, 0)
}

// fail answers f with an error envelope on command cmd.
func (ss *session) fail(f frame.Frame, cmd uint16, code int, msg string) {
	ss.send(cmd, f.RequestID, f.SequenceID, wire.Err(f.RequestID, code, msg), 0)
}

// push sends a server-initiated frame with request_id 0.
func (ss *session) push(cmd uint16, seq uint32, data any) {
	body, err := wire.OK(0, data)
	if err != nil {
		ss.t.Errorf("server marshal: %v", err)
		return
	}
	ss.send(cmd, 0, seq, body, 0)
}

// nextFrame waits for a frame the handler passed on.
func (ss *session) nextFrame() frame.Frame {
	ss.t.Helper()
	select {
	case f := <-ss.frames:
		return f
	case <-time.After(5 * time.Second):
		ss.t.Fatal("no frame reached the server")
		return frame.Frame{}
	}
}

func decodeBody[T any](t *testing.T, f frame.Frame) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(f.Body, &v); err != nil {
		t.Errorf("server: command %d body %q: %v", f.Command, f.Body, err)
	}
	return v
}

// Tokens the default handler knows.
const (
	goodToken = "good"
	holdTopic = "grp_hold" // READ_MESSAGE on it is left for the test to answer
	userID    = 42
)

// defaultHandler answers like imd would for the commands the typed helpers use.
func defaultHandler(ss *session, f frame.Frame) {
	switch f.Command {
	case wire.CmdAuth:
		req := decodeBody[wire.AuthRequest](ss.t, f)
		if req.Token != goodToken {
			ss.fail(f, wire.CmdAuth, wire.CodeUnauthenticated, "bad token")
			return
		}
		ss.ok(f, wire.CmdAuth, wire.AuthResponse{UserID: userID, TenantID: "default", DeviceID: req.DeviceID, ServerTime: 1})
	case wire.CmdHeartbeat:
		ss.ok(f, wire.CmdHeartbeat, wire.HeartbeatResponse{ServerTime: 2})
	case wire.CmdReadMessage: // echoes the seq, so concurrent callers can check they got their own answer
		req := decodeBody[wire.ReadRequest](ss.t, f)
		if req.Topic == holdTopic {
			ss.frames <- f
			return
		}
		ss.ok(f, wire.CmdReadMessage, wire.ReadResponse{Topic: req.Topic, Seq: req.Seq})
	case wire.CmdSendMessage:
		req := decodeBody[wire.SendMessageRequest](ss.t, f)
		if len(req.Content) > 1000 {
			ss.fail(f, wire.CmdSendAck, wire.CodeTooLarge, "content too large")
			return
		}
		ss.ok(f, wire.CmdSendAck, wire.SendAck{MsgID: 100, Seq: 1, Topic: req.Topic, ClientMsgID: req.ClientMsgID, ServerTime: 3})
	case wire.CmdGetHistory:
		req := decodeBody[wire.GetHistoryRequest](ss.t, f)
		var resp wire.GetHistoryResponse
		for seq := req.BeforeSeq - 1; seq > 0 && len(resp.Messages) < req.Limit; seq-- {
			resp.Messages = append(resp.Messages, testMessage(req.Topic, seq))
		}
		ss.ok(f, wire.CmdGetHistory, resp)
	case wire.CmdSyncMessages:
		// Pages of two messages from since_seq+1 to seq 5, compressed like
		// imd's large bodies; topic "grp_denied" fails on the FINISH command.
		req := decodeBody[wire.SyncMessagesRequest](ss.t, f)
		if req.Topic == "grp_denied" {
			ss.fail(f, wire.CmdSyncMessagesFinish, wire.CodeForbidden, "not a member")
			return
		}
		for seq := req.SinceSeq + 1; seq <= 5; seq += 2 {
			page := wire.SyncMessagesPage{Messages: []wire.Message{testMessage(req.Topic, seq)}}
			if seq+1 <= 5 {
				page.Messages = append(page.Messages, testMessage(req.Topic, seq+1))
			}
			body, _ := wire.OK(f.RequestID, page)
			ss.send(wire.CmdSyncMessages, f.RequestID, f.SequenceID, body, 64)
		}
		ss.ok(f, wire.CmdSyncMessagesFinish, wire.SyncMessagesFinish{Topic: req.Topic, LastSeq: 5})
	default:
		ss.frames <- f
	}
}

func testMessage(topic string, seq int64) wire.Message {
	return wire.Message{Topic: topic, Seq: seq, MsgID: 1000 + seq, From: 7, ClientMsgID: "c", Type: wire.TypeText,
		Content: json.RawMessage(`{"text":"hello"}`), Mentions: []int64{}, Status: wire.StatusNormal, Version: 1, CreatedAt: 5}
}

// testTLS returns a server config with the standard library's test certificate
// (127.0.0.1, ::1, example.com and *.example.com) and a client config that
// trusts it.
func testTLS(t *testing.T) (server, client *tls.Config) {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	srv.StartTLS()
	srv.Close()
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	return srv.TLS, &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
}

// isClosedRead reports whether err is how a server read ends when the client
// closed: EOF or a reset.
func isClosedRead(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || bytes.Contains([]byte(err.Error()), []byte("reset"))
}
