package ports

import (
	"context"

	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/month"
)

// SeqHoles is the MySQL side of the seq-hole sweeper (DESIGN §4): a seq the Redis script
// allocated whose message never committed leaves a hole that only a tombstone closes.
type SeqHoles interface {
	// HoleSuspects lists, in name order after `after`, up to limit topics whose route-mirror
	// row of month m says they may hold a hole: fewer rows than their seq range, or a first seq
	// that does not follow the topic's previous segment.
	HoleSuspects(ctx context.Context, tenant string, m month.Month, after string, limit int) ([]string, error)
	// CloseHole stores tombstone (status deleted, no client_msg_id) at its seq in its month
	// with the route-mirror upsert, under the rules of MessageStore.Append: seq.ErrTaken when
	// the seq is stored (or the month's grown range would overlap another month's),
	// shard.ErrMonthNotWritable or shard.ErrMonthMissing for a month that cannot take it.
	CloseHole(ctx context.Context, tenant string, tombstone message.Message) error
}
