package redis

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

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

// BenchmarkApplyP2PPass measures a deliver pass of W1 (DESIGN §10): 8 messages of 8 P2P
// conversations, two recipients each, in one Apply; redis-µs/msg is the Redis server's CPU.
func BenchmarkApplyP2PPass(b *testing.B) {
	c := testClient(b)
	tenant := testTenant(b, c)
	s := NewDialogStore(c)
	const pass = 8
	b.ReportAllocs()
	seq := 0
	cpu0 := redisCPU(b, c)
	for b.Loop() {
		us := make([]dialog.Update, pass)
		for j := range us {
			seq++
			conv, a := int64(100+j), int64(20_000+2*j)
			us[j] = dialog.Update{
				ConversationID: conv, Score: int64(1_000_000 + seq), Sender: a,
				Preview: dialog.Preview{Topic: fmt.Sprintf("p2p_%d_%d", a, a+1), ConversationID: conv, MsgID: int64(seq), Seq: int64(seq), Type: "text", Text: "hi"},
				Once:    "m" + strconv.Itoa(seq), OnceTTL: time.Minute,
				Batches: []dialog.Batch{{Index: int(a % 64), Users: []int64{a}}, {Index: int((a + 1) % 64), Users: []int64{a + 1}}},
			}
		}
		if _, err := s.Apply(context.Background(), tenant, us...); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64((redisCPU(b, c)-cpu0).Microseconds())/float64(seq), "redis-µs/msg")
}

// redisCPU is the server's CPU time so far (INFO cpu), user and system.
func redisCPU(b *testing.B, c rueidis.Client) time.Duration {
	info, err := c.Do(context.Background(), c.B().Info().Section("cpu").Build()).ToString()
	if err != nil {
		b.Fatal(err)
	}
	var total float64
	for _, line := range strings.Split(info, "\n") {
		for _, key := range []string{"used_cpu_sys:", "used_cpu_user:"} {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), key); ok {
				f, err := strconv.ParseFloat(v, 64)
				if err != nil {
					b.Fatal(err)
				}
				total += f
			}
		}
	}
	return time.Duration(total * float64(time.Second))
}
