package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/imdhq/imd/cmd/imctl/adminapi"
	"github.com/imdhq/imd/cmd/imctl/bench/verify"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/topic"
)

// w1: N users in N/2 friend pairs, each closed-loop to its friend.
type w1 struct{}

func (w1) describe(c Config) string {
	return fmt.Sprintf("p2p: %d online users in %d friend pairs, each closed-loop with one SEND outstanding", c.Users, c.Users/2)
}

func (w1) opName() string { return "" }

func (w1) prepare(ctx context.Context, r *run) error {
	users, err := r.createUsers(ctx, r.cfg.Users)
	if err != nil {
		return err
	}
	prog := r.newProgress("befriending pairs", len(users)/2)
	err = r.parallel(ctx, len(users)/2, func(ctx context.Context, i int) error {
		defer prog.add()
		return r.cfg.Admin.Friend(ctx, users[2*i].id, users[2*i+1].id)
	})
	prog.done()
	if err != nil {
		return fmt.Errorf("bench: friendships: %w", err)
	}
	peers := devices(users, 1)
	for i := 0; i < len(peers); i += 2 {
		t := topic.ForPair(peers[i].user, peers[i+1].user)
		peers[i].topic, peers[i+1].topic = t, t
	}
	if err := r.connect(ctx, peers); err != nil {
		return err
	}
	for _, p := range peers {
		r.join(p.topic, p)
	}
	return nil
}

func (w1) load(ctx context.Context, r *run) { r.closedLoop(ctx, r.peers) }

// w2: users in groups of GroupSize, each closed-loop to its group.
type w2 struct{}

func (w2) describe(c Config) string {
	return fmt.Sprintf("groups: %d online users in %d groups of %d, each closed-loop with one SEND outstanding", c.Users, c.Users/c.GroupSize, c.GroupSize)
}

func (w2) opName() string { return "" }

func (w2) prepare(ctx context.Context, r *run) error {
	return r.prepareGroups(ctx, r.cfg.Users/r.cfg.GroupSize, r.cfg.GroupSize)
}

func (w2) load(ctx context.Context, r *run) { r.closedLoop(ctx, r.peers) }

// prepareGroups creates groups of size users each, connects every member once and has it
// send to its own group.
func (r *run) prepareGroups(ctx context.Context, groups, size int) error {
	users, err := r.createUsers(ctx, groups*size)
	if err != nil {
		return err
	}
	topics := make([]string, groups)
	prog := r.newProgress("creating groups", groups)
	err = r.parallel(ctx, groups, func(ctx context.Context, g int) error {
		defer prog.add()
		members := users[g*size : (g+1)*size]
		grp, err := r.cfg.Admin.CreateGroup(ctx, r.userID(g), members[0].id, ids(members[1:]))
		topics[g] = grp.Topic
		return err
	})
	prog.done()
	if err != nil {
		return fmt.Errorf("bench: groups: %w", err)
	}
	peers := devices(users, 1)
	for i, p := range peers {
		p.topic = topics[i/size]
	}
	if err := r.connect(ctx, peers); err != nil {
		return err
	}
	for _, p := range peers {
		r.join(p.topic, p)
	}
	return nil
}

// t1: Tinode's T1, groups of GroupSize where every member publishes closed-loop.
type t1 struct{}

func (t1) describe(c Config) string {
	return fmt.Sprintf("T1: %d groups of %d members, all %d online and publishing closed-loop with one SEND outstanding",
		c.Groups, c.GroupSize, c.Groups*c.GroupSize)
}

func (t1) opName() string { return "" }

func (t1) prepare(ctx context.Context, r *run) error {
	return r.prepareGroups(ctx, r.cfg.Groups, r.cfg.GroupSize)
}

func (t1) load(ctx context.Context, r *run) { r.closedLoop(ctx, r.peers) }

// t2: Tinode's T2, one group of Members, all online, the first Publishers of
// them publishing closed-loop and the rest only receiving.
type t2 struct{}

func (t2) describe(c Config) string {
	return fmt.Sprintf("T2: one group of %d members, all online, %d publishing closed-loop with one SEND outstanding, %d only receiving",
		c.Members, c.Publishers, c.Members-c.Publishers)
}

func (t2) opName() string { return "" }

func (t2) prepare(ctx context.Context, r *run) error { return r.prepareGroups(ctx, 1, r.cfg.Members) }

func (t2) load(ctx context.Context, r *run) { r.closedLoop(ctx, r.peers[:r.cfg.Publishers]) }

// closedLoop has every connected one of senders send to its topic, one SEND
// outstanding each, until the load ends.
func (r *run) closedLoop(ctx context.Context, senders []*peer) {
	var wg sync.WaitGroup
	for _, p := range senders {
		if p.conn == nil {
			continue
		}
		wg.Go(func() {
			for r.running(ctx) && p.conn.Err() == nil {
				r.send(ctx, p, p.topic)
			}
		})
	}
	wg.Wait()
}

// w3: one big group, all online, one sender at a fixed rate.
type w3 struct{}

// w3MaxInflight bounds the sends in flight, so a stalled server cannot make
// the paced sender pile up goroutines.
const w3MaxInflight = 256

func (w3) describe(c Config) string {
	return fmt.Sprintf("big group: one group of %d members, all online, one sender at %g msg/s", c.Members, c.Rate)
}

func (w3) opName() string { return "" }

func (w3) prepare(ctx context.Context, r *run) error {
	users, err := r.createUsers(ctx, r.cfg.Members)
	if err != nil {
		return err
	}
	start := time.Now()
	grp, err := r.cfg.Admin.CreateGroup(ctx, r.userID(0), users[0].id, ids(users[1:]))
	if err != nil {
		return fmt.Errorf("bench: group: %w", err)
	}
	r.logf("created group %s with %d members in %s", grp.Topic, len(users), time.Since(start).Round(time.Millisecond))
	peers := devices(users, 1)
	if err := r.connect(ctx, peers); err != nil {
		return err
	}
	if peers[0].conn == nil {
		return fmt.Errorf("bench: the sender could not connect")
	}
	for _, p := range peers {
		p.topic = grp.Topic
		r.join(grp.Topic, p)
	}
	return nil
}

// load paces sends at cfg.Rate. A sender that falls more than a second
// behind skips ahead instead of bursting.
func (w3) load(ctx context.Context, r *run) {
	sender := r.peers[0]
	interval := time.Duration(float64(time.Second) / r.cfg.Rate)
	inflight := make(chan struct{}, w3MaxInflight)
	var wg sync.WaitGroup
	next := time.Now()
	for r.running(ctx) && sender.conn.Err() == nil {
		if wait := time.Until(next); wait > 0 {
			sleep(ctx, wait)
			continue
		}
		if time.Since(next) > time.Second {
			next = time.Now()
		}
		next = next.Add(interval)
		inflight <- struct{}{}
		wg.Go(func() {
			defer func() { <-inflight }()
			r.send(ctx, sender, sender.topic)
		})
	}
	wg.Wait()
}

// w4: idle authenticated connections that only heartbeat.
type w4 struct{}

func (w4) describe(c Config) string {
	return fmt.Sprintf("idle: %d authenticated connections of %d users, HEARTBEAT every %s", c.Conns, min(c.Users, c.Conns), c.Heartbeat)
}

func (w4) opName() string { return "heartbeat" }

func (w4) prepare(ctx context.Context, r *run) error {
	users, err := r.createUsers(ctx, min(r.cfg.Users, r.cfg.Conns))
	if err != nil {
		return err
	}
	// Connection i is device i/len(users)+1 of user i%len(users).
	peers := make([]*peer, r.cfg.Conns)
	for i := range peers {
		u := users[i%len(users)]
		peers[i] = &peer{user: u.id, token: u.token, device: uint64(i/len(users) + 1)}
	}
	return r.connect(ctx, peers)
}

// load spreads each round of heartbeats evenly over the interval, as
// independent clients would, with at most cfg.Parallel in flight.
func (w4) load(ctx context.Context, r *run) {
	inflight := make(chan struct{}, r.cfg.Parallel)
	var wg sync.WaitGroup
	start := time.Now()
	step := r.cfg.Heartbeat / time.Duration(len(r.peers))
	for round := 0; r.running(ctx); round++ {
		for i, p := range r.peers {
			due := start.Add(time.Duration(round)*r.cfg.Heartbeat + time.Duration(i)*step)
			if wait := time.Until(due); wait > time.Millisecond {
				sleep(ctx, wait)
			}
			if !r.running(ctx) {
				break
			}
			if p.conn == nil || p.conn.Err() != nil {
				continue
			}
			inflight <- struct{}{}
			wg.Go(func() {
				defer func() { <-inflight }()
				r.timedOp(func() error { return p.conn.Heartbeat(ctx) }, "heartbeat")
			})
		}
	}
	wg.Wait()
}

// timedOp runs one measured non-send request.
func (r *run) timedOp(op func() error, name string) error {
	start := time.Now()
	err := op()
	if err != nil {
		r.errs.add(name + ":" + errorKey(err))
		return err
	}
	d := time.Since(start)
	r.opsAll.Add(1)
	r.liveLat.Record(d)
	if r.inWindow(start) {
		r.ops.Add(1)
		r.opLat.Record(d)
	}
	return nil
}

// w5: GET_HISTORY pages over a topic whose messages span two months.
type w5 struct{}

// monthProbes bounds the search for the active month: the server refuses
// months more than a year ahead anyway.
const monthProbes = 13

func (w5) describe(c Config) string {
	return fmt.Sprintf("history: %d readers page a group topic of 2×%d messages spanning two months with GET_HISTORY, %d per page",
		c.Users, c.Messages, c.PageSize)
}

func (w5) opName() string { return "get_history" }

// prepare sends Messages messages in the active month, advances the tenant
// to the next month through the admin API, and sends as many again. Every
// run moves the tenant's active month one month ahead: use a tenant of its
// own for repeated runs.
func (w5) prepare(ctx context.Context, r *run) error {
	users, err := r.createUsers(ctx, 2)
	if err != nil {
		return err
	}
	sender, reader := users[0], users[1]
	grp, err := r.cfg.Admin.CreateGroup(ctx, r.userID(0), sender.id, []int64{reader.id})
	if err != nil {
		return fmt.Errorf("bench: group: %w", err)
	}
	peers := []*peer{{user: sender.id, token: sender.token, device: 1, topic: grp.Topic}}
	for d := range r.cfg.Users {
		peers = append(peers, &peer{user: reader.id, token: reader.token, device: uint64(d + 1), topic: grp.Topic})
	}
	if err := r.connect(ctx, peers); err != nil {
		return err
	}
	if peers[0].conn == nil {
		return fmt.Errorf("bench: the sender could not connect")
	}
	for _, p := range peers {
		r.join(grp.Topic, p)
	}

	first, err := activeMonth(ctx, r.cfg.Admin, month.Of(time.Now()))
	if err != nil {
		return err
	}
	if err := r.sendSeries(ctx, peers[0], "sending in "+first.String()); err != nil {
		return err
	}
	if _, err := r.cfg.Admin.Advance(ctx, first.Next().String()); err != nil {
		return fmt.Errorf("bench: advance to %s: %w", first.Next(), err)
	}
	if err := r.sendSeries(ctx, peers[0], "sending in "+first.Next().String()); err != nil {
		return err
	}
	r.extra["months"] = first.String() + "," + first.Next().String()
	r.extra["topic"] = grp.Topic
	return nil
}

// activeMonth finds the tenant's active month: advancing to a month before
// it fails with 40001 and to it is a no-op, so the first month from now on
// that advances is the active one.
func activeMonth(ctx context.Context, admin *adminapi.Client, from month.Month) (month.Month, error) {
	m := from
	for range monthProbes {
		active, err := admin.Advance(ctx, m.String())
		if err == nil {
			got, err := month.Parse(active)
			if err != nil {
				return 0, fmt.Errorf("bench: advance answered active month %q: %w", active, err)
			}
			return got, nil
		}
		if adminapi.CodeOf(err) != 40001 {
			return 0, fmt.Errorf("bench: find the active month: %w", err)
		}
		m = m.Next()
	}
	return 0, fmt.Errorf("bench: the active month of tenant %s is more than a year ahead; use another tenant", admin.Tenant())
}

// sendSeries sends cfg.Messages messages from p, one at a time.
func (r *run) sendSeries(ctx context.Context, p *peer, desc string) error {
	prog := r.newProgress(desc, r.cfg.Messages)
	defer prog.done()
	for range r.cfg.Messages {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !r.send(ctx, p, p.topic) && p.conn.Err() != nil {
			return fmt.Errorf("bench: sender lost: %w", p.conn.Err())
		}
		prog.add()
	}
	return nil
}

// load has every reader page the topic from the newest message to the
// first, over and over; each complete pass is checked against the ACKs.
func (w5) load(ctx context.Context, r *run) {
	var wg sync.WaitGroup
	for _, p := range r.peers[1:] {
		if p.conn == nil {
			continue
		}
		wg.Go(func() {
			for r.running(ctx) && p.conn.Err() == nil {
				if pass, ok := r.historyPass(ctx, p); ok {
					r.v.CheckStored(p.topic, pass, verify.Descending)
				}
			}
		})
	}
	wg.Wait()
}

// historyPass pages p's topic down to its first message; ok is false when a
// page failed or the load ended first.
func (r *run) historyPass(ctx context.Context, p *peer) (pass []verify.Stored, ok bool) {
	var before int64
	for r.running(ctx) {
		var n int
		err := r.timedOp(func() error {
			msgs, err := p.conn.History(ctx, p.topic, before, r.cfg.PageSize)
			for _, m := range msgs {
				pass = append(pass, verify.Stored{Seq: m.Seq, MsgID: m.MsgID})
			}
			n = len(msgs)
			return err
		}, "get_history")
		if err != nil {
			sleep(ctx, failPause)
			return nil, false
		}
		if n < r.cfg.PageSize {
			return pass, true
		}
		before = pass[len(pass)-1].Seq
		if before <= 1 {
			return pass, true
		}
	}
	return nil, false
}

// devices gives each user one connection as device d.
func devices(users []user, d uint64) []*peer {
	peers := make([]*peer, len(users))
	for i, u := range users {
		peers[i] = &peer{user: u.id, token: u.token, device: d}
	}
	return peers
}

func ids(users []user) []int64 {
	out := make([]int64, len(users))
	for i, u := range users {
		out[i] = u.id
	}
	return out
}
