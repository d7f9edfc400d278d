package client

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/imdhq/imd/clients/go/frame"
	"github.com/imdhq/imd/clients/go/wire"
)

// readStateHandler answers READ_STATE like imd: the sender's own message gets the counts, any
// other is 40301.
func readStateHandler(ss *session, f frame.Frame) {
	if f.Command != wire.CmdReadState {
		defaultHandler(ss, f)
		return
	}
	req := decodeBody[wire.ReadStateRequest](ss.t, f)
	if req.Seq != 7 {
		ss.fail(f, f.Command, wire.CodeForbidden, "only the sender of a message sees who read it")
		return
	}
	ss.ok(f, f.Command, wire.ReadState{Topic: req.Topic, ConversationID: 5, Seq: req.Seq, Read: 1, Of: 2, Readers: []int64{9}})
}

func TestReadState(t *testing.T) {
	srv := startServer(t, "tcp", "127.0.0.1:0", withHandler(readStateHandler))
	c := dial(t, Options{Addr: srv.addr()})
	got, err := c.ReadState(context.Background(), "grp_1", 7)
	want := wire.ReadState{Topic: "grp_1", ConversationID: 5, Seq: 7, Read: 1, Of: 2, Readers: []int64{9}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("ReadState = %+v, %v; want %+v", got, err, want)
	}
	_, err = c.ReadState(context.Background(), "grp_1", 8)
	var ce *CodeError
	if !errors.As(err, &ce) || ce.Code != wire.CodeForbidden {
		t.Fatalf("ReadState of another's message: %v; want 40301", err)
	}
}
