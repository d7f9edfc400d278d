package protocol

import (
	"github.com/imdhq/imd/clients/go/wire"
	"github.com/imdhq/imd/core/domain/msgref"
	"github.com/imdhq/imd/core/usecase/reactions"
)

// ReactionCounts returns the wire form of a reaction summary; none is an empty array.
func ReactionCounts(cs []msgref.ReactionCount) []wire.ReactionCount {
	out := make([]wire.ReactionCount, len(cs))
	for i, c := range cs {
		out[i] = wire.ReactionCount{Emoji: c.Emoji, Count: c.Count, Mine: c.Mine}
	}
	return out
}

// ReactionSummaryOf is the answer of ADD_REACTION and REMOVE_REACTION.
func ReactionSummaryOf(s reactions.Summary) wire.ReactionSummary {
	return wire.ReactionSummary{Topic: s.Topic, Seq: s.Seq, Reactions: ReactionCounts(s.Reactions)}
}

// Reactors is the answer of GET_REACTIONS.
func Reactors(topicName string, seq int64, rs []msgref.Reaction) wire.GetReactionsResponse {
	out := wire.GetReactionsResponse{Topic: topicName, Seq: seq, Reactions: make([]wire.Reaction, len(rs))}
	for i, r := range rs {
		out.Reactions[i] = wire.Reaction{Emoji: r.Emoji, User: r.User, CreatedAt: r.At.UnixMilli()}
	}
	return out
}

// Pins is the answer of the pin commands, newest first.
func Pins(topicName string, ps []msgref.Pin) wire.PinsResponse {
	out := wire.PinsResponse{Topic: topicName, Pins: make([]wire.Pin, len(ps))}
	for i, p := range ps {
		out.Pins[i] = wire.Pin{Seq: p.Seq, PinnedBy: p.By, PinnedAt: p.At.UnixMilli()}
	}
	return out
}

// WithReactions sets each message's reaction summary from sums, by seq; messages without
// reactions keep none, so their JSON is what it was before reactions existed.
func WithReactions(ms []wire.Message, sums map[int64][]msgref.ReactionCount) []wire.Message {
	for i := range ms {
		if cs := sums[ms[i].Seq]; len(cs) > 0 {
			ms[i].Reactions = ReactionCounts(cs)
		}
	}
	return ms
}
