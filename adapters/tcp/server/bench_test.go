package server

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/prometheus"
	"github.com/imdhq/imd/clients/go/frame"
	"github.com/imdhq/imd/clients/go/wire"
)

// benchWindow is how many HEARTBEATs each benchmark connection keeps in flight: enough to
// keep the event loop busy without measuring the client's round-trip latency.
const benchWindow = 8

// BenchmarkFramesPlain measures HEARTBEAT round trips through one event loop in tls: off
// mode; each round trip is one frame in and one frame out (frames/s counts both).
func BenchmarkFramesPlain(b *testing.B) { benchmarkFrames(b, false) }

// BenchmarkFramesTLS is BenchmarkFramesPlain in tls: native mode: every frame is decrypted
// or encrypted on the way.
func BenchmarkFramesTLS(b *testing.B) { benchmarkFrames(b, true) }

func benchmarkFrames(b *testing.B, native bool) {
	for _, conns := range []int{1, 64, 512} {
		b.Run(fmt.Sprintf("conns=%d", conns), func(b *testing.B) {
			cfg := Config{Multicore: false} // one event loop
			var pki testPKI
			if native {
				pki = newTestPKI(b)
				cfg.TLS = pki.server
			}
			// Production's metrics adapter and log level: per-request lines are debug, so off.
			h := startLogging(b, slog.New(slog.DiscardHandler), cfg, Deps{Metrics: prometheus.New(nil)})
			clients := make([]net.Conn, conns)
			for i := range clients {
				nc, err := benchDial(h.srv.Addr(), pki.client)
				if err != nil {
					b.Fatalf("dial %d: %v", i, err)
				}
				defer nc.Close()
				clients[i] = nc
			}
			var batch []byte
			for i := range benchWindow {
				var err error
				if batch, err = frame.Append(batch, wire.CmdHeartbeat, uint64(i+1), uint32(i+1), []byte(`{}`), 0); err != nil {
					b.Fatal(err)
				}
			}
			rounds := (b.N + conns*benchWindow - 1) / (conns * benchWindow)

			b.ReportAllocs()
			b.ResetTimer()
			started := time.Now()
			var wg sync.WaitGroup
			errs := make(chan error, conns)
			for _, nc := range clients {
				wg.Go(func() {
					if err := heartbeatRounds(nc, batch, rounds); err != nil {
						errs <- err
					}
				})
			}
			wg.Wait()
			elapsed := time.Since(started)
			b.StopTimer()
			close(errs)
			for err := range errs {
				b.Fatal(err)
			}
			trips := float64(rounds * conns * benchWindow)
			b.ReportMetric(trips/elapsed.Seconds(), "roundtrips/s")
			b.ReportMetric(2*trips/elapsed.Seconds(), "frames/s")
		})
	}
}

// benchDial connects, with TLS when cfg is set.
func benchDial(addr net.Addr, cfg *tls.Config) (net.Conn, error) {
	nc, err := net.Dial(addr.Network(), addr.String())
	if err != nil || cfg == nil {
		return nc, err
	}
	tc := tls.Client(nc, cfg)
	if err := tc.Handshake(); err != nil {
		_ = nc.Close()
		return nil, err
	}
	return tc, nil
}

// heartbeatRounds writes batch and reads as many answers, rounds times.
func heartbeatRounds(nc net.Conn, batch []byte, rounds int) error {
	r := bufio.NewReaderSize(nc, 16<<10)
	for range rounds {
		if _, err := nc.Write(batch); err != nil {
			return fmt.Errorf("write: %w", err)
		}
		for range benchWindow {
			if err := skipFrame(r); err != nil {
				return err
			}
		}
	}
	return nil
}

// skipFrame reads one frame, checking only that it is a HEARTBEAT answer.
func skipFrame(r *bufio.Reader) error {
	head, err := r.Peek(frame.HeaderLen)
	if err != nil {
		return fmt.Errorf("read: %w", err)
	}
	h, err := frame.ParseHeader(head)
	if err != nil {
		return err
	}
	if h.Command != wire.CmdHeartbeat {
		return fmt.Errorf("answer command %d", h.Command)
	}
	if _, err := r.Discard(frame.HeaderLen + int(h.BodyLen)); err != nil {
		return fmt.Errorf("read body: %w", err)
	}
	return nil
}
