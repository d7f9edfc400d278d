package e2e

// Seed 003 §23 item 14 (a slow client's full outbound queue does not hurt the process) with
// seed 003 §8: a member whose client stops reading its socket sits in a group beside healthy
// ones. Its TCP window fills and its outbound queue reaches its bound; pushes to it are then
// dropped and counted, and its device gets missed-message rows, while the other members
// receive every message and their heartbeats are answered. Once it falls silent the idle
// timeout cuts it, and on reconnecting it syncs everything it missed.

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/imdhq/imd/clients/go/client"
	"github.com/imdhq/imd/clients/go/frame"
	"github.com/imdhq/imd/clients/go/wire"
)

func TestStuckClientDoesNotHoldBackTheOtherMembers(t *testing.T) {
	srv := Start(t, Options{Env: map[string]string{
		// A push unacknowledged for 2 s goes to the mailbox; a connection silent for 6 s is
		// closed. The outbound bound stays the default: 4 MiB unsent beyond the kernel's buffers.
		"IMD_TCP_PUSH_ACK_TIMEOUT": "2s", "IMD_TCP_IDLE_TIMEOUT": "6s",
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const healthy, sends = 3, 300
	const stuckUser, stuckDevice = 140_001, 9
	ids := []int64{140_000, stuckUser} // the sender, the stuck member, then the healthy ones
	for i := range healthy {
		ids = append(ids, 140_002+int64(i))
	}
	tokens := make([]string, len(ids))
	for i, id := range ids {
		tokens[i] = srv.User(id)
	}
	topic := srv.Group(140, ids[0], ids[1:]...)
	sender := srv.Connect(ctx, tokens[0], 1)

	stuck := dialStuck(t, srv, tokens[1], stuckDevice)
	stopWriting := make(chan struct{})
	stuckDone := make(chan struct{})
	fallSilent := sync.OnceFunc(func() { close(stopWriting); <-stuckDone })
	defer fallSilent() // a failing test ends the writer too
	// It keeps writing heartbeats, never reading a byte, until told to fall silent.
	go func() {
		defer close(stuckDone)
		for n := uint64(2); ; n++ {
			select {
			case <-stopWriting:
				return
			case <-time.After(500 * time.Millisecond):
			}
			hb, _ := frame.Append(nil, wire.CmdHeartbeat, n, uint32(n), []byte(`{}`), 0)
			_ = stuck.SetWriteDeadline(time.Now().Add(5 * time.Second))
			if _, err := stuck.Write(hb); err != nil {
				t.Errorf("stuck client's heartbeat write: %v", err)
				return
			}
		}
	}()

	// Healthy members read everything; they and the sender heartbeat every second to the end.
	var members sync.WaitGroup
	received := make([]map[int64]int, healthy)
	alive := []*client.Conn{sender}
	for i := range healthy {
		conn := srv.Connect(ctx, tokens[2+i], 1)
		alive = append(alive, conn)
		members.Add(1)
		go func() {
			defer members.Done()
			received[i] = receive(ctx, conn, sends)
		}()
	}
	stopHeartbeats := make(chan struct{})
	heartbeatsDone := make(chan struct{})
	go func() {
		defer close(heartbeatsDone)
		heartbeat(t, ctx, alive, stopHeartbeats)
	}()
	defer func() { close(stopHeartbeats); <-heartbeatsDone }()

	drops := srv.metricValue("outbound_drop_total")
	for i := range sends {
		// Random bytes hardly compress: each push costs the stuck connection ~36 KB, all of
		// them ~11 MB, more than its kernel buffers and its outbound bound hold together.
		if _, err := sender.Send(ctx, textMessage(topic, fmt.Sprint("stuck-", i), randomText(t, 36<<10))); err != nil {
			t.Fatalf("send %d beside the stuck member: %v", i, err)
		}
	}
	members.Wait()
	for i, got := range received {
		if len(got) != sends {
			t.Fatalf("healthy member %d received %d of %d messages", ids[2+i], len(got), sends)
		}
		for seq, n := range got {
			if n != 1 {
				t.Fatalf("healthy member %d received seq %d %d times", ids[2+i], seq, n)
			}
		}
	}

	// The stuck connection was backpressured, not waited for: pushes dropped and counted, and
	// its device's missed messages written to its mailbox.
	if got := srv.metricValue("outbound_drop_total"); got <= drops {
		t.Fatalf("outbound_drop_total %v → %v: no push to the stuck connection was dropped", drops, got)
	}
	db := srv.TenantDB()
	eventually(t, 30*time.Second, "missed-message rows for the stuck device", func() bool {
		return countRows(t, db, "SELECT COUNT(*) FROM t_mailbox_events WHERE user_id = ? AND device_id = ? AND event_type = 5", stuckUser, stuckDevice) > 0
	})

	// Silent from now on, it is cut by the idle timeout.
	fallSilent()
	cut := make(chan error, 1)
	go func() {
		_ = stuck.SetReadDeadline(time.Now().Add(60 * time.Second))
		_, err := io.Copy(io.Discard, stuck) // what was queued, then the server's FIN
		cut <- err
	}()
	eventually(t, 60*time.Second, "the stuck connection closed by the server", func() bool {
		return srv.metricValue("tcp_connections") == float64(1+healthy)
	})
	if err := <-cut; err != nil {
		t.Fatalf("the stuck connection did not end with the server's close: %v", err)
	}

	// Reconnected, the stuck device catches up on every message.
	back := srv.Connect(ctx, tokens[1], stuckDevice)
	var seqs []int64
	for since := int64(0); ; {
		msgs, fin, err := back.SyncMessages(ctx, topic, since, 200)
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, seqsOf(msgs)...)
		since = fin.LastSeq
		if !fin.HasMore {
			break
		}
	}
	if !slices.Equal(seqs, seqRange(1, sends)) {
		t.Fatalf("the stuck device syncs %d messages after reconnecting, want 1..%d", len(seqs), sends)
	}
	if _, events, _ := syncInbox(t, ctx, back, wire.SyncInboxRequest{}); !hasType(events, "missed_message") {
		t.Fatal("the stuck device's SYNC_INBOX has no missed_message event")
	}
}

// dialStuck authenticates device on a connection whose receive buffer is as small as the
// kernel allows, and returns it once AUTH is answered: from then on nobody reads it.
func dialStuck(t *testing.T, srv *Server, token string, device uint64) net.Conn {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var err error
		if cerr := rc.Control(func(fd uintptr) {
			err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
		}); cerr != nil {
			return cerr
		}
		return err
	}}
	c, err := d.Dial("tcp", srv.TCPAddr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	body, _ := json.Marshal(wire.AuthRequest{Token: token, DeviceID: device})
	auth, err := frame.Append(nil, wire.CmdAuth, 1, 1, body, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(auth); err != nil {
		t.Fatal(err)
	}
	awaitResponse(t, c, 1)
	return c
}

// receive collects c's MESSAGE pushes by seq until want distinct ones arrived or ctx ends.
func receive(ctx context.Context, c *client.Conn, want int) map[int64]int {
	got := map[int64]int{}
	for len(got) < want {
		select {
		case p := <-c.Pushes():
			if p.Command == wire.CmdMessage && p.Message != nil {
				got[p.Message.Seq]++
			}
		case <-ctx.Done():
			return got
		}
	}
	return got
}

// heartbeat heartbeats every connection once a second until stop; one not answered fails the
// test.
func heartbeat(t *testing.T, ctx context.Context, conns []*client.Conn, stop <-chan struct{}) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		for _, c := range conns {
			if err := c.Heartbeat(ctx); err != nil {
				t.Errorf("a healthy connection's heartbeat beside the stuck one: %v", err)
				return
			}
		}
	}
}

func randomText(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b)
}
