package apns

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/apns/apnstest"
)

// BenchmarkSend is one alert to the local APNs per op over one HTTP/2 connection
// (docs/BENCHMARKS.md, item 30): ns/op is the latency, cpu-µs/alert the process's user+system
// CPU per alert, the fake server's share (TLS, JWT verification, JSON) included.
func BenchmarkSend(b *testing.B) {
	s, err := apnstest.New()
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	c := newClient(b, s)
	a := alert(okToken, apnstest.Topic)
	ctx := context.Background()
	if err := c.Send(ctx, a); err != nil { // connection and provider token made outside the timing
		b.Fatal(err)
	}
	before := cpu(b)
	b.ResetTimer()
	for b.Loop() {
		if err := c.Send(ctx, a); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64((cpu(b)-before).Microseconds())/float64(b.N), "cpu-µs/alert")
}

func cpu(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
