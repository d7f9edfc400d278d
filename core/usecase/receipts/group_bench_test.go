package receipts_test

import (
	"testing"

	"github.com/imdhq/imd/core/domain/dialog"
	"github.com/imdhq/imd/core/usecase/conversation"
	"github.com/imdhq/imd/core/usecase/receipts"
)

// BenchmarkReceipts1000 is issue 31's receipts in a 1,000-member group, one event per op, on
// the memory fakes (the use cases' own CPU; docs/BENCHMARKS.md section 28 says what MySQL adds):
//   - group-read: a member's READ_MESSAGE that moves its mark, with the receipts hook — a
//     group read pushes nothing, so its cost does not grow with the group;
//   - read-state: the sender's READ_STATE of a message, readers counted and listed from the
//     1,000 members' marks (the fake walks them all; MySQL reads one index range);
//   - p2p: the receipts' own share of a peer's delivery and read of a P2P message (the
//     read path itself is group-read's): the setting read, the encoding, the push.
func BenchmarkReceipts1000(b *testing.B) {
	const members, messages = 1000, 600
	w := newWorld(b, members, members, 1000)
	group := conversation.Address{Topic: "grp_10"}
	var last int64
	for i := range messages {
		last = w.send(b, group, i).Seq
	}
	for u := int64(2); u <= members/2; u++ { // half the members read everything
		w.read(b, u, "grp_10", last)
	}
	b.Run("group-read", func(b *testing.B) {
		for i := range b.N {
			u := int64(members/2 + 1 + i%(members/2))
			w.read(b, u, "grp_10", min(int64(i/(members/2)+1), last))
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/event")
	})
	b.Run("read-state", func(b *testing.B) {
		req := receipts.StateRequest{Tenant: tenant, User: 1, Address: group, Seq: last}
		for range b.N {
			st, err := w.svc.ReadState(b.Context(), req)
			if err != nil || st.Readers.Of != members-1 {
				b.Fatalf("%+v, %v", st, err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/event")
	})
	b.Run("p2p", func(b *testing.B) {
		m := w.send(b, conversation.Address{ToUser: 2}, messages)
		for i := range b.N { // two events: a delivered receipt and a read receipt
			w.svc.Delivered(b.Context(), tenant, 2, &m)
			w.svc.Read(b.Context(), tenant, 2, dialog.Watermark{Topic: m.Topic, ConversationID: m.ConversationID, Seq: m.Seq, MsgID: m.MsgID})
			if i%1024 == 0 {
				w.pushes.Take()
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(2*b.N), "ns/event")
	})
}
