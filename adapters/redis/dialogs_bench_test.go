package redis

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/imdhq/imd/core/domain/dialog"
)

// BenchmarkApply1000Recipients measures the list updates of messages to a group of 1,000
// (DESIGN §10 W3) as the deliver worker runs them: the preview and every recipient's dialog,
// for one message alone and for a backlog of messages applied together.
func BenchmarkApply1000Recipients(b *testing.B) {
	c := testClient(b)
	tenant := testTenant(b, c)
	s := NewDialogStore(c)
	const members, batches = 1000, 64
	groups := make([]dialog.Batch, batches)
	for u := range int64(members) {
		i := int(u % batches)
		groups[i] = dialog.Batch{Index: i, Users: append(groups[i].Users, 10_000+u)}
	}
	for _, together := range []int{1, 16} {
		b.Run(fmt.Sprintf("messages=%d", together), func(b *testing.B) {
			b.ReportAllocs()
			seq := 0
			for b.Loop() {
				us := make([]dialog.Update, together)
				for j := range us {
					seq++
					us[j] = dialog.Update{
						ConversationID: 7, Score: int64(1_000_000 + seq), Sender: 10_000,
						Preview: dialog.Preview{Topic: "grp_7", ConversationID: 7, MsgID: int64(seq), Seq: int64(seq), Type: "text", Text: "hi"},
						Once:    "m" + strconv.Itoa(seq), OnceTTL: time.Minute, Batches: groups,
					}
				}
				if _, err := s.Apply(context.Background(), tenant, us...); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(seq*members)/b.Elapsed().Seconds(), "deliveries/s")
		})
	}
}
