package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/imdhq/imd/clients/go/client"
)

// BenchmarkSendAck1000MemberGroup measures seed 003 §23 item 10, the SEND_ACK latency of a
// 1,000-member group, through the real binary: one sender, closed loop, with 20 members online
// reading their pushes while the deliver workers fan every message out to all 1,000. It reports
// the p50 and p99 SEND_ACK; the item's other half, no MySQL row per member, is asserted by
// TestInboxBigGroupSendWritesConstantRows. Latency stays here, never in a timed assert.
func BenchmarkSendAck1000MemberGroup(b *testing.B) {
	srv := Start(b, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	const members, online = 1000, 20
	ids := make([]int64, members)
	for i := range ids {
		ids[i] = 150_001 + int64(i)
	}
	insertUsers(b, srv.TenantDB(), ids[1+online:])
	conns := make([]*client.Conn, 1+online)
	for i := range conns {
		conns[i] = srv.Connect(ctx, srv.User(ids[i]), 1)
	}
	topic := srv.Group(150, ids[0], ids[1:]...)
	for _, c := range conns[1:] {
		go func() { // an online member reads its pushes, as a client does
			for {
				select {
				case <-c.Pushes():
				case <-c.Closed():
					return
				}
			}
		}()
	}

	sender := conns[0]
	var lat []time.Duration
	n := 0
	for b.Loop() {
		started := time.Now()
		if _, err := sender.Send(ctx, textMessage(topic, fmt.Sprint("big-", n), "to a thousand")); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(started))
		n++
	}
	slices.Sort(lat)
	b.ReportMetric(ms(lat[len(lat)/2]), "send-ack-p50-ms")
	b.ReportMetric(ms(lat[len(lat)*99/100]), "send-ack-p99-ms")
}
