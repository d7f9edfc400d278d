package client

import (
	"context"

	"github.com/imdhq/imd/clients/go/wire"
)

// ReadState tells who of the other members read message seq of topic, which
// the user sent (READ_STATE): read K of N, and the readers in conversations up
// to the server's receipts.group_limit members. In P2P the peer's reads and
// deliveries also arrive live as RECEIPT pushes (wire.CmdReceipt, data
// wire.Receipt) on Pushes.
func (c *Conn) ReadState(ctx context.Context, topic string, seq int64) (wire.ReadState, error) {
	var st wire.ReadState
	err := c.call(ctx, wire.CmdReadState, wire.ReadStateRequest{Topic: topic, Seq: seq}, &st)
	return st, err
}
