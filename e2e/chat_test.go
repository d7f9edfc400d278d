package e2e

// `imctl chat` on the reconnecting Go client (issue 15 item 2), against the real binaries: it
// stays connected while idle past the server's idle timeout, and across a cut connection and
// an imd restart it reconnects, resends the line typed while down, and prints what it missed
// — every message once.

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/imdhq/imd/clients/go/client"
	"github.com/imdhq/imd/clients/go/wire"
)

// chatIdleTimeout stands in for the default 120 s: the chat heartbeats well inside it.
const chatIdleTimeout = 2 * time.Second

func TestChatSurvivesIdleCutAndRestart(t *testing.T) {
	srv := Start(t, Options{Env: map[string]string{"IMD_TCP_IDLE_TIMEOUT": chatIdleTimeout.String()}})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const me, peerID = 1501, 1502
	srv.User(me)
	peerToken := srv.User(peerID)
	topic := srv.Group(1500, me, peerID)
	path := startCutter(t, srv.TCPAddr)
	chat := startChat(t, srv, path.addr(), me, topic, "--verbose", "--heartbeat", (chatIdleTimeout / 5).String())
	chat.waitFor(t, "(connected as user 1501)", 1)

	// The peer is a reconnecting client too: it heartbeats through the idle phase and comes
	// back by itself after the restart.
	peer, err := client.Connect(ctx, client.Config{
		Dial: client.Dialer(client.Options{Addr: srv.TCPAddr}), Token: client.StaticToken(peerToken), DeviceID: 1,
		Heartbeat: chatIdleTimeout / 5,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	go func() {
		for range peer.Events() {
		}
	}()
	say := func(text string) {
		t.Helper()
		if _, err := peer.Send(ctx, textMessage(topic, "peer-"+text, text)); err != nil {
			t.Fatalf("peer send %q: %v", text, err)
		}
	}
	say("hello")
	chat.waitFor(t, "] 1502: hello\n", 1)

	// Idle for three idle timeouts: only the heartbeats keep the connection.
	time.Sleep(3 * chatIdleTimeout)
	if n := chat.count("! disconnected"); n != 0 {
		t.Fatalf("the idle chat was disconnected:\n%s", chat.text())
	}
	say("after idle")
	chat.waitFor(t, "] 1502: after idle\n", 1)
	chat.typeLine(t, "from chat")
	chat.waitFor(t, "(sent as seq", 1)

	// The connection is cut while the peer talks: the chat catches up when it is back.
	path.cut()
	chat.waitFor(t, "! disconnected", 1)
	for i := range 5 {
		say(fmt.Sprint("missed ", i))
	}
	path.restore()
	for i := range 5 {
		chat.waitFor(t, fmt.Sprintf("] 1502: missed %d\n", i), 1)
	}

	// imd crashes; a line typed meanwhile is sent once it is back.
	srv.Kill()
	chat.waitFor(t, "! disconnected", 2)
	chat.typeLine(t, "while down")
	srv.Restart()
	for i := range 3 {
		say(fmt.Sprint("after restart ", i))
	}
	for i := range 3 {
		chat.waitFor(t, fmt.Sprintf("] 1502: after restart %d\n", i), 1)
	}
	chat.waitFor(t, "(sent as seq", 2)

	// Nothing lost, nothing twice: every stored message of the peer printed once, each
	// line of the chat stored once.
	var stored []wire.Message
	if err := peer.Do(ctx, func(c *client.Conn) error { stored = syncAll(t, ctx, c, topic); return nil }); err != nil {
		t.Fatal(err)
	}
	mine := map[string]int{}
	for _, m := range stored {
		text := textOf(t, m)
		if m.From == me {
			mine[text]++
			continue
		}
		if n := chat.count(fmt.Sprintf("[%d] 1502: %s\n", m.Seq, text)); n != 1 {
			t.Errorf("seq %d %q printed %d times", m.Seq, text, n)
		}
	}
	if mine["from chat"] != 1 || mine["while down"] != 1 || len(mine) != 2 {
		t.Errorf("the chat's lines stored %v, want each once", mine)
	}
	if len(stored) != 1+1+1+5+1+3 {
		t.Errorf("%d messages stored, want 12", len(stored))
	}
	if t.Failed() {
		t.Logf("chat output:\n%s", chat.text())
	}
}

var imctlBuild = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "imctl-e2e-bin")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "imctl")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/imctl")
	cmd.Dir = repoRoot()
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/imctl: %w\n%s", err, out)
	}
	return bin, nil
})

// chatProcess is a running `imctl chat` with its stdin and output.
type chatProcess struct {
	in  io.WriteCloser
	out *lockedBuffer
}

func startChat(t *testing.T, srv *Server, tcpAddr string, user int64, topic string, extra ...string) *chatProcess {
	t.Helper()
	bin, err := imctlBuild()
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{"chat", "--http", "http://" + srv.HTTPAddr, "--admin-key", srv.AdminKey, "--tenant", srv.Tenant,
		"--tcp", tcpAddr, "--user", fmt.Sprint(user), "--topic", topic}, extra...)
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir()) // no config file of the machine's user
	p := &chatProcess{out: &lockedBuffer{}}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	if p.in, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.in.Close() // end of input ends the chat
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	return p
}

func (p *chatProcess) typeLine(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(p.in, line+"\n"); err != nil {
		t.Fatalf("type %q: %v", line, err)
	}
}

// text is everything printed so far (lockedBuffer.tail trims the last newline).
func (p *chatProcess) text() string {
	p.out.mu.Lock()
	defer p.out.mu.Unlock()
	return p.out.buf.String()
}

func (p *chatProcess) count(s string) int { return strings.Count(p.text(), s) }

// waitFor waits until s has been printed n times.
func (p *chatProcess) waitFor(t *testing.T, s string, n int) {
	t.Helper()
	deadline := time.Now().Add(45 * time.Second)
	for p.count(s) < n {
		if time.Now().After(deadline) {
			t.Fatalf("chat printed %q %d times, want %d; output:\n%s", s, p.count(s), n, p.text())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// cutter is a TCP relay to imd whose connections the test can cut, refusing new ones until
// restored: a network path that goes away while the server stays up.
type cutter struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	down   bool
	conns  []net.Conn
}

func startCutter(t *testing.T, target string) *cutter {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &cutter{ln: ln, target: target}
	go c.serve()
	t.Cleanup(func() { ln.Close(); c.cut() })
	return c
}

func (c *cutter) addr() string { return c.ln.Addr().String() }

func (c *cutter) serve() {
	for {
		down, err := c.ln.Accept()
		if err != nil {
			return
		}
		c.mu.Lock()
		cut := c.down
		c.mu.Unlock()
		if cut {
			down.Close()
			continue
		}
		up, err := net.Dial("tcp", c.target)
		if err != nil {
			down.Close()
			continue
		}
		c.mu.Lock()
		c.conns = append(c.conns, down, up)
		c.mu.Unlock()
		go func() { io.Copy(up, down); up.Close() }()
		go func() { io.Copy(down, up); down.Close() }()
	}
}

func (c *cutter) cut() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.down = true
	for _, conn := range c.conns {
		conn.Close()
	}
	c.conns = nil
}

func (c *cutter) restore() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.down = false
}
