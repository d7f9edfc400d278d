package client_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"

	"github.com/imdhq/imd/clients/go/client"
	"github.com/imdhq/imd/clients/go/frame"
	"github.com/imdhq/imd/clients/go/wire"
)

// A chat client: connect, send, and print what arrives. Against a real server, Addr is
// "im.example.com:443" with Options.TLS set, or "wss://api.example.com/ws"; the token comes
// from your backend (imd's admin API mints them).
func Example() {
	addr := exampleServer() // a stand-in for imd on loopback, so the example runs
	ctx := context.Background()

	c, err := client.Connect(ctx, client.Config{
		Dial:     client.Dialer(client.Options{Addr: addr}),
		Token:    client.StaticToken("token-of-user-42"),
		DeviceID: 1,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	fmt.Println("signed in as user", c.Me().UserID)

	// Send waits for the SEND_ACK, resending across reconnects with the same client_msg_id.
	ack, err := c.Send(ctx, wire.SendMessageRequest{
		Topic: "grp_1", Type: wire.TypeText, Content: json.RawMessage(`{"text":"hello"}`),
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("stored as seq", ack.Seq)

	// Events brings live messages, missed ones replayed after a reconnect (each once),
	// other pushes and the connection's ups and downs. Keep reading it.
	for e := range c.Events() {
		if e.Kind == client.EventMessage {
			fmt.Printf("%s #%d from user %d: %s\n", e.Message.Topic, e.Message.Seq, e.Message.From, e.Message.Content)
			return
		}
	}
	// Output:
	// signed in as user 42
	// stored as seq 1
	// grp_1 #2 from user 7: {"text":"hi back"}
}

// exampleServer answers just enough of the protocol for Example: AUTH, empty syncs, and a
// SEND_MESSAGE, which it acknowledges and answers with a message of user 7.
func exampleServer() string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	go func() {
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		ln.Close()
		r := bufio.NewReader(nc)
		reply := func(cmd uint16, f frame.Frame, data any) {
			body, _ := wire.OK(f.RequestID, data)
			out, _ := frame.Append(nil, cmd, f.RequestID, f.SequenceID, body, 0)
			nc.Write(out)
		}
		for {
			head, err := r.Peek(frame.HeaderLen)
			if err != nil {
				return
			}
			h, _ := frame.ParseHeader(head)
			buf := make([]byte, frame.HeaderLen+int(h.BodyLen))
			if _, err := io.ReadFull(r, buf); err != nil {
				return
			}
			f, _, err := frame.Decode(buf)
			if err != nil {
				return
			}
			switch f.Command {
			case wire.CmdAuth:
				reply(f.Command, f, wire.AuthResponse{UserID: 42, TenantID: "acme", DeviceID: 1, ServerTime: 1})
			case wire.CmdSyncInbox:
				reply(wire.CmdSyncInboxFinish, f, wire.SyncInboxFinish{})
			case wire.CmdSendMessage:
				reply(wire.CmdSendAck, f, wire.SendAck{MsgID: 9001, Seq: 1, Topic: "grp_1"})
				f.RequestID, f.SequenceID = 0, 1
				reply(wire.CmdMessage, f, wire.Message{Topic: "grp_1", Seq: 2, MsgID: 9002, From: 7,
					Type: wire.TypeText, Content: json.RawMessage(`{"text":"hi back"}`), CreatedAt: 2})
			case wire.CmdHeartbeat:
				reply(f.Command, f, wire.HeartbeatResponse{ServerTime: 2})
			}
		}
	}()
	return ln.Addr().String()
}
