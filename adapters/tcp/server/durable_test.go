package server

import (
	"context"
	"testing"
	"time"

	"github.com/imdhq/imd/clients/go/wire"
	"github.com/imdhq/imd/core/usecase/send"
	"github.com/imdhq/imd/ports"
)

// gatedMarks has the shape of the MySQL queued mark, which waits for the COMMIT of the
// transaction that carries it, or for its context: here the COMMIT is the test's release.
// Only the first call is held.
type gatedMarks struct {
	ports.QueuedMarks
	entered chan struct{} // capacity 1: the first call arrived
	release chan struct{} // closed: every call goes through
	marked  chan error    // capacity 1: what the first call returned
}

func (g *gatedMarks) MarkQueued(ctx context.Context, tenant, topic string, from int64, clientMsgID string) error {
	select {
	case g.entered <- struct{}{}:
	default:
	}
	var err error
	select {
	case <-g.release:
		err = g.QueuedMarks.MarkQueued(ctx, tenant, topic, from, clientMsgID)
	case <-ctx.Done():
		err = ctx.Err()
	}
	select {
	case g.marked <- err:
	default:
	}
	return err
}

// A client that disconnects while its SEND is between COMMIT and SEND_ACK cancels nothing
// durable: the queued mark is written, so the resend after its reconnect gets the same seq
// and queues no second deliver job (issue 34).
func TestDisconnectAfterCommitKeepsTheQueuedMark(t *testing.T) {
	st := newStack(t)
	marks := &gatedMarks{
		QueuedMarks: st.send.Store.(ports.QueuedMarks),
		entered:     make(chan struct{}, 1), release: make(chan struct{}), marked: make(chan error, 1),
	}
	d := st.send
	d.Queued = marks
	st.deps.Send = send.New(send.Config{MsgIDWindow: 5 * time.Minute}, d)
	h := start(t, Config{RequestTimeout: time.Minute}, st.deps)

	alice := h.dial(t)
	alice.auth(1, 7)
	req := wire.SendMessageRequest{ToUser: 2, ClientMsgID: "window", Type: "text", Content: text("hi")}
	alice.send(wire.CmdSendMessage, req)
	select {
	case <-marks.entered:
	case <-time.After(5 * time.Second):
		t.Fatal("the send never reached its queued mark")
	}
	_ = alice.nc.Close()
	eventuallyWithin(t, 5*time.Second, "the server to see the connection closed", func() bool {
		return h.metrics.gauge("tcp_connections") == 0
	})
	close(marks.release)
	select {
	case err := <-marks.marked:
		if err != nil {
			t.Fatalf("queued mark after the client left: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the queued mark never finished")
	}

	again := h.dial(t)
	again.auth(1, 7)
	f, env := again.call(wire.CmdSendMessage, req)
	var ack wire.SendAck
	decodeData(t, env, &ack)
	if f.Command != wire.CmdSendAck || ack.Seq != 1 {
		t.Fatalf("resend: command %d, ack %+v; want SEND_ACK of seq 1", f.Command, ack)
	}
	if got := st.queue.Queued("default"); got != 1 {
		t.Fatalf("%d deliver jobs queued, want 1: the resend queued the message again", got)
	}
}
