package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"github.com/imdhq/imd/cmd/imctl/bench/serverwork"
	"math"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/imdhq/imd/clients/go/client"
	"github.com/imdhq/imd/clients/go/wire"
	"github.com/imdhq/imd/cmd/imctl/bench/hist"
	"github.com/imdhq/imd/cmd/imctl/bench/procstat"
	"github.com/imdhq/imd/cmd/imctl/bench/report"
	"github.com/imdhq/imd/cmd/imctl/bench/verify"
)

// Tuning of the run's own mechanics.
const (
	// pushBuffer is each connection's push queue. The client's default (1024)
	// is allocated up front, which costs ~80 KB per connection: too much for
	// tens of thousands. The queue is drained at once anyway.
	pushBuffer = 64
	// drainMax and drainStall bound the wait for deliveries after the load.
	drainMax   = 30 * time.Second
	drainStall = 5 * time.Second
	// readBackWorkers read topics back in parallel at the end.
	readBackWorkers = 8
)

// workload is one of W1–W5, T1–T2.
type workload interface {
	describe(c Config) string
	// prepare creates users and conversations, connects, and joins the
	// verifier to the topics, all before the clock starts.
	prepare(ctx context.Context, r *run) error
	// load runs until r.running is false.
	load(ctx context.Context, r *run)
	// opName names the non-send request the workload measures, or "".
	opName() string
}

// workloadNamed returns the workload of a validated name.
func workloadNamed(name string) workload {
	switch name {
	case W1:
		return w1{}
	case W2:
		return w2{}
	case W3:
		return w3{}
	case W4:
		return w4{}
	case T1:
		return t1{}
	case T2:
		return t2{}
	default:
		return w5{}
	}
}

// run is the state of one benchmark run.
type run struct {
	cfg   Config
	epoch time.Time // monotonic origin of every timestamp in the run
	base  int64     // random id offset, so repeated runs never collide

	// The measured window, in nanoseconds after epoch; nobody is inside it
	// until the load starts, and the load ends with it.
	windowStart, windowEnd atomic.Int64

	peers   []*peer
	readers map[string]*peer // a connected member per topic, to read it back
	v       *verify.Verifier
	pumps   sync.WaitGroup // push readers
	closing atomic.Bool    // set before the run closes its own connections

	ackLat, deliveryLat, opLat, connectLat hist.Histogram
	liveLat                                hist.Histogram // the headline latency, warm-up included, for the status line

	sent, acked, delivered, ops, retries, gaveUp atomic.Int64
	ackedAll, deliveredAll, opsAll               atomic.Int64 // warm-up included, for the status line
	lost, established, readBackErrors            atomic.Int64
	errs                                         errorCounts
	extra                                        map[string]string // workload facts for the report
	textBytes                                    int               // the size of a message body, at least
}

// peer is one connection of one user's device.
type peer struct {
	idx    verify.Recipient
	user   int64
	device uint64
	token  string
	topic  string // the conversation it sends to
	conn   *client.Conn
	count  atomic.Int64 // messages it has sent, for client_msg_id
}

// Run executes the workload cfg names and returns its report. The report's
// Pass says whether every guarantee held; err is for runs that could not be
// carried out at all.
func Run(ctx context.Context, cfg Config) (report.Report, error) {
	if err := cfg.Validate(); err != nil {
		return report.Report{}, err
	}
	w := workloadNamed(cfg.Workload)
	r := &run{
		cfg:     cfg,
		epoch:   time.Now(),
		base:    (rand.Int64N(900_000) + 100_000) * 1_000_000,
		readers: make(map[string]*peer),
		errs:    errorCounts{m: make(map[string]int64)},
		extra:   make(map[string]string),
	}
	if cfg.Workload == T1 || cfg.Workload == T2 {
		r.textBytes = tinodeText
		r.extra["text_bytes"] = strconv.Itoa(tinodeText)
	}
	r.windowStart.Store(math.MaxInt64)
	r.windowEnd.Store(math.MaxInt64)
	watch := procstat.Start(procstat.Proc(), cfg.Targets)
	defer r.closeAll()

	r.logf("%s: %s (ids from %d)", cfg.Workload, w.describe(cfg), r.base+1)
	if err := w.prepare(ctx, r); err != nil {
		return report.Report{}, err
	}

	now := r.since(time.Now())
	r.windowStart.Store(now + int64(cfg.Warmup))
	r.windowEnd.Store(now + int64(cfg.Warmup+cfg.Duration))
	stopStatus := r.startStatus(w, cfg.Warmup+cfg.Duration)
	windowUsage := r.watchWindow(ctx)
	w.load(ctx, r)
	stopStatus()
	window, work := windowUsage()

	// An interrupted run still reports what it measured, but skips the
	// checks at the end that would take a while.
	interrupted := ctx.Err() != nil
	if !interrupted {
		r.drain(ctx)
		r.readBack(ctx)
	}
	r.closeAll()
	usage, util := watch.Stop()

	rep := report.Report{
		Workload:    cfg.Workload,
		Description: w.describe(cfg),
		Params:      cfg.params(),
		Started:     r.epoch,
		WarmupS:     cfg.Warmup.Seconds(),
		DurationS:   cfg.Duration.Seconds(),
		Machine:     procstat.ReadMachine(procstat.Proc()),
		Connections: report.Connections{Wanted: len(r.peers), Established: int(r.established.Load()), Lost: int(r.lost.Load())},
		Sent:        r.sent.Load(), Acked: r.acked.Load(), Retries: r.retries.Load(), GaveUp: r.gaveUp.Load(),
		Delivered: r.delivered.Load(), Ops: r.ops.Load(),
		Errors:         r.errs.snapshot(),
		Verification:   r.v.Tally(),
		ReadBackErrors: int(r.readBackErrors.Load()),
		Processes:      usage,
		Window:         window,
		ServerWork:     work,
		MachineCPU:     util,
		Interrupted:    interrupted,
	}
	for k, v := range r.extra {
		rep.Params[k] = v
	}
	secs := cfg.Duration.Seconds()
	rep.AckedPerSec, rep.DeliveredPerSec, rep.OpsPerSec = float64(rep.Acked)/secs, float64(rep.Delivered)/secs, float64(rep.Ops)/secs
	for _, l := range []struct {
		name string
		h    *hist.Histogram
	}{{"send_ack", &r.ackLat}, {"send_to_delivery", &r.deliveryLat}, {w.opName(), &r.opLat}, {"connect_auth", &r.connectLat}} {
		if s := l.h.Snapshot(); s.Count > 0 {
			rep.Latencies = append(rep.Latencies, report.Latency{Name: l.name, Summary: s.Summary()})
		}
	}
	rep.Judge()
	return rep, nil
}

func (r *run) since(t time.Time) int64 { return int64(t.Sub(r.epoch)) }

// watchWindow reads the processes' CPU at the start and end of the measured window, so that
// CPU per ACKed message divides the window's CPU by the window's ACKs (setup, warm-up, drain
// and read-back excluded), and records the server's CPU profile and the Redis and MySQL
// counters over the same window when asked to. The returned function waits for all.
func (r *run) watchWindow(ctx context.Context) func() ([]procstat.Usage, *serverwork.Snapshot) {
	var usage []procstat.Usage
	var work *serverwork.Snapshot
	var wg sync.WaitGroup
	wg.Go(func() {
		sleep(ctx, time.Duration(r.windowStart.Load()-r.since(time.Now())))
		if ctx.Err() != nil {
			return
		}
		if r.cfg.ServerProfile != nil {
			wg.Go(func() {
				if err := r.cfg.ServerProfile(ctx, r.cfg.Duration); err != nil {
					r.logf("warning: server CPU profile: %v", err)
					r.errs.add("server_profile")
				}
			})
		}
		before, workErr := r.serverWork(ctx)
		watch := procstat.Start(procstat.Proc(), r.cfg.Targets)
		sleep(ctx, time.Duration(r.windowEnd.Load()-r.since(time.Now())))
		usage, _ = watch.Stop()
		if after, err := r.serverWork(ctx); workErr == nil && err == nil && after != nil {
			d := after.Sub(*before)
			work = &d
		}
	})
	return func() ([]procstat.Usage, *serverwork.Snapshot) {
		wg.Wait()
		return usage, work
	}
}

// serverWork reads the servers' counters, nil when not asked to; a failure is reported and
// counted, and leaves the window without them.
func (r *run) serverWork(ctx context.Context) (*serverwork.Snapshot, error) {
	if r.cfg.ServerWork == nil {
		return nil, nil
	}
	s, err := r.cfg.ServerWork(ctx)
	if err != nil {
		r.logf("warning: server counters: %v", err)
		r.errs.add("server_counters")
		return nil, err
	}
	return &s, nil
}

// inWindow reports whether t falls in the measured window.
func (r *run) inWindow(t time.Time) bool {
	n := r.since(t)
	return n >= r.windowStart.Load() && n < r.windowEnd.Load()
}

// running reports whether the load should go on.
func (r *run) running(ctx context.Context) bool {
	return ctx.Err() == nil && r.since(time.Now()) < r.windowEnd.Load()
}

func (r *run) logf(format string, args ...any) {
	if r.cfg.Status != nil {
		fmt.Fprintf(r.cfg.Status, format+"\n", args...)
	}
}

// userID is the id of the run's i-th user (or group).
func (r *run) userID(i int) int64 { return r.base + int64(i) + 1 }

// user is a created user with its token.
type user struct {
	id    int64
	token string
}

// createUsers registers n users and mints their tokens.
func (r *run) createUsers(ctx context.Context, n int) ([]user, error) {
	users := make([]user, n)
	ttl := r.cfg.Warmup + r.cfg.Duration + time.Hour
	prog := r.newProgress("creating users", n)
	err := r.parallel(ctx, n, func(ctx context.Context, i int) error {
		id := r.userID(i)
		if err := r.cfg.Admin.CreateUser(ctx, id, "bench-"+strconv.Itoa(i)); err != nil {
			return err
		}
		tok, err := r.cfg.Admin.Token(ctx, id, ttl)
		if err != nil {
			return err
		}
		users[i] = user{id: id, token: tok}
		prog.add()
		return nil
	})
	prog.done()
	if err != nil {
		return nil, fmt.Errorf("bench: create users: %w", err)
	}
	return users, nil
}

// parallel calls fn for 0..n-1 with cfg.Parallel at a time, stopping at the
// first error.
func (r *run) parallel(ctx context.Context, n int, fn func(ctx context.Context, i int) error) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(r.cfg.Parallel)
	for i := range n {
		if gctx.Err() != nil {
			break
		}
		g.Go(func() error { return fn(gctx, i) })
	}
	if err := g.Wait(); err != nil {
		return err
	}
	return ctx.Err()
}

// connect dials and authenticates every peer, spreading them over the
// source IPs, and starts reading their pushes. Peers that fail stay without
// a connection and are counted; only a run with no connection at all fails.
func (r *run) connect(ctx context.Context, peers []*peer) error {
	r.peers = peers
	r.v = verify.New(len(peers))
	var firstErr atomic.Pointer[error]
	prog := r.newProgress("connecting", len(peers))
	_ = r.parallel(ctx, len(peers), func(ctx context.Context, i int) error {
		p := peers[i]
		p.idx = verify.Recipient(i)
		opts := r.cfg.Dial
		opts.PushBuffer = pushBuffer
		if len(r.cfg.SourceIPs) > 0 {
			opts.LocalAddr = r.cfg.SourceIPs[i%len(r.cfg.SourceIPs)]
		}
		if len(r.cfg.Nodes) > 0 {
			opts.Addr = r.cfg.Nodes[i%len(r.cfg.Nodes)]
		}
		start := time.Now()
		c, err := client.Dial(ctx, opts)
		if err == nil {
			if _, err = c.Auth(ctx, p.token, p.device); err != nil {
				c.Close()
				err = fmt.Errorf("auth user %d device %d: %w", p.user, p.device, err)
			}
		}
		if err != nil {
			r.errs.add("connect:" + errorKey(err))
			firstErr.CompareAndSwap(nil, &err)
			return nil
		}
		r.connectLat.Record(time.Since(start))
		p.conn = c
		r.established.Add(1)
		r.pumps.Add(1)
		go r.pump(p)
		prog.add()
		return nil
	})
	prog.done()
	if err := ctx.Err(); err != nil {
		return err
	}
	if r.established.Load() == 0 {
		return fmt.Errorf("bench: no connection could be established: %w", *firstErr.Load())
	}
	if n := int64(len(peers)) - r.established.Load(); n > 0 {
		r.logf("warning: %d of %d connections failed, first: %v", n, len(peers), *firstErr.Load())
	}
	return nil
}

// join makes p an expected recipient of topic.
func (r *run) join(topic string, p *peer) {
	if p.conn == nil {
		return
	}
	r.v.Join(topic, p.idx)
	r.readers[topic] = p
}

// pump drains one connection's pushes into the verifier until it closes.
func (r *run) pump(p *peer) {
	defer r.pumps.Done()
	for push := range p.conn.Pushes() {
		switch push.Command {
		case wire.CmdMessage:
			if push.Message == nil {
				r.errs.add("push:" + strconv.Itoa(push.Envelope.Code))
				continue
			}
			now := time.Now()
			r.v.Delivered(p.idx, push.Message.Topic, push.Message.Seq)
			r.deliveredAll.Add(1)
			if r.inWindow(now) {
				r.delivered.Add(1)
				if sent, ok := sentAt(push.Message.ClientMsgID); ok {
					r.deliveryLat.Record(time.Duration(r.since(now) - sent))
				}
			}
		case wire.CmdKick:
			r.errs.add("kicked")
		}
	}
	if !r.closing.Load() {
		r.lost.Add(1)
		r.v.Offline(p.idx)
		r.errs.add("conn_lost:" + errorKey(p.conn.Err()))
	}
}

// Send retries: 50301/42901 and timeouts are retried with the same
// client_msg_id (PROTOCOL.md §5), which must yield the same seq.
const (
	maxAttempts  = 4
	firstBackoff = 20 * time.Millisecond
	failPause    = 100 * time.Millisecond // after giving up, so a failing loop does not spin
)

// send sends one text message from p to topic, retrying as the protocol
// allows, and records the outcome. It reports whether the message was ACKed.
func (r *run) send(ctx context.Context, p *peer, topic string) bool {
	n := p.count.Add(1)
	start := time.Now()
	req := wire.SendMessageRequest{
		Topic:       topic,
		ClientMsgID: clientMsgID(n, r.since(start)),
		Type:        wire.TypeText,
		Content:     content(n, r.textBytes),
	}
	measured := r.inWindow(start)
	if measured {
		r.sent.Add(1)
	}
	for attempt := 1; ; attempt++ {
		ack, err := p.conn.Send(ctx, req)
		if err == nil {
			now := time.Now()
			r.v.Acked(topic, ack.Seq, ack.MsgID, p.idx)
			r.ackedAll.Add(1)
			r.liveLat.Record(now.Sub(start))
			if measured {
				r.ackLat.Record(now.Sub(start))
			}
			if r.inWindow(now) {
				r.acked.Add(1)
			}
			return true
		}
		r.errs.add(errorKey(err))
		if attempt == maxAttempts || !retriable(err) || p.conn.Err() != nil || ctx.Err() != nil {
			r.gaveUp.Add(1)
			sleep(ctx, failPause)
			return false
		}
		r.retries.Add(1)
		sleep(ctx, firstBackoff<<(attempt-1))
	}
}

// drain waits for the deliveries still owed, until none are, they stop
// coming, or drainMax passes.
func (r *run) drain(ctx context.Context) {
	deadline := time.Now().Add(drainMax)
	stall := cmp.Or(r.cfg.drainStall, drainStall)
	last, lastChange := r.v.Pending(), time.Now()
	for last > 0 && ctx.Err() == nil && time.Now().Before(deadline) && time.Since(lastChange) < stall {
		sleep(ctx, 20*time.Millisecond)
		if p := r.v.Pending(); p != last {
			last, lastChange = p, time.Now()
		}
	}
	if last > 0 {
		r.logf("stopped waiting with about %d deliveries outstanding", last)
	}
}

// readBack reads topics back through SYNC_MESSAGES and checks every ACKed
// message is stored, sampling whole topics up to cfg.SyncMax messages.
func (r *run) readBack(ctx context.Context) {
	topics := r.v.Topics()
	rand.Shuffle(len(topics), func(i, j int) { topics[i], topics[j] = topics[j], topics[i] })
	var chosen []string
	budget := r.cfg.SyncMax
	for _, t := range topics {
		if t.Acked <= budget && r.readers[t.Topic] != nil {
			chosen = append(chosen, t.Topic)
			budget -= t.Acked
		}
	}
	if len(chosen) == 0 {
		return
	}
	prog := r.newProgress("reading back", len(chosen))
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(readBackWorkers)
	for _, topic := range chosen {
		g.Go(func() error {
			stored, err := syncAll(ctx, r.readers[topic].conn, topic)
			if err != nil {
				r.readBackErrors.Add(1)
				r.errs.add("read_back:" + errorKey(err))
				return nil
			}
			r.v.CheckStored(topic, stored, verify.Ascending)
			prog.add()
			return nil
		})
	}
	_ = g.Wait()
	prog.done()
}

// syncAll reads a whole topic with SYNC_MESSAGES, page after page.
func syncAll(ctx context.Context, c *client.Conn, topic string) ([]verify.Stored, error) {
	var out []verify.Stored
	var since int64
	for {
		msgs, finish, err := c.SyncMessages(ctx, topic, since, wire.MaxSyncLimit)
		if err != nil {
			return nil, err
		}
		for _, m := range msgs {
			out = append(out, verify.Stored{Seq: m.Seq, MsgID: m.MsgID})
		}
		if !finish.HasMore || len(msgs) == 0 {
			return out, nil
		}
		next := msgs[len(msgs)-1].Seq
		if next <= since {
			return nil, fmt.Errorf("%w: SYNC_MESSAGES of %s since %d did not advance", client.ErrProtocol, topic, since)
		}
		since = next
	}
}

// closeAll closes the run's connections and waits for their pumps.
func (r *run) closeAll() {
	r.closing.Store(true)
	for _, p := range r.peers {
		if p.conn != nil {
			p.conn.Close()
		}
	}
	r.pumps.Wait()
}

// sleep waits d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// retriable reports whether a failed send may be retried with the same
// client_msg_id.
func retriable(err error) bool {
	var ce *client.CodeError
	if errors.As(err, &ce) {
		return ce.Code == wire.CodeBusy || ce.Code == wire.CodeRateLimited
	}
	return errors.Is(err, context.DeadlineExceeded)
}
