package e2e

// The fault-injection run of issue 19: closed-loop senders with retries, while imd, Redis and
// MariaDB are killed and restarted, Redis is flushed and the month is switched early, one after
// another; then everything is read back. MariaDB and Redis are private to the test (started by
// deploy/local/services.sh under the test's own state directory and ports), so killing and
// flushing them touches no other test.

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/imdhq/imd/clients/go/client"
	"github.com/imdhq/imd/clients/go/wire"
)

// faultDuration is how long the senders run; IMD_FAULT_DURATION overrides it (e.g. 60s).
const faultDuration = 30 * time.Second

// privateServices are a MariaDB and a Redis of one test.
type privateServices struct {
	t                    *testing.T
	dir                  string
	mysqlPort, redisPort int
	DSN, RedisAddr       string
	mariadbPID, redisPID string
}

func startPrivateServices(t *testing.T) *privateServices {
	t.Helper()
	p := &privateServices{t: t, dir: t.TempDir(), mysqlPort: freePort(t), redisPort: freePort(t)}
	p.DSN = fmt.Sprintf("imd:imd@tcp(127.0.0.1:%d)/?parseTime=true&multiStatements=true", p.mysqlPort)
	p.RedisAddr = fmt.Sprintf("127.0.0.1:%d", p.redisPort)
	p.mariadbPID = filepath.Join(p.dir, "mariadb", "mariadb.pid")
	p.redisPID = filepath.Join(p.dir, "redis", "redis.pid")
	p.services("up")
	t.Cleanup(func() { p.services("down") })
	return p
}

func (p *privateServices) services(verb string) {
	p.t.Helper()
	// Basic: no cluster nor second MariaDB, whose ports next to random ones may be taken.
	runServices(p.t, verb, "IMD_STATE_DIR="+p.dir, "IMD_SERVICES_BASIC=1",
		"IMD_MYSQL_PORT="+strconv.Itoa(p.mysqlPort), "IMD_REDIS_PORT="+strconv.Itoa(p.redisPort))
}

// runServices runs deploy/local/services.sh verb with the extra environment given.
func runServices(t *testing.T, verb string, env ...string) {
	t.Helper()
	cmd := exec.Command("bash", filepath.Join(repoRoot(), "deploy", "local", "services.sh"), verb)
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("services.sh %s: %v\n%s", verb, err, out)
	}
}

// kill9 ends the server whose pid file is given, as a crash would.
func kill9(t *testing.T, pidFile string) {
	t.Helper()
	raw, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill -9 %d: %v", pid, err)
	}
	for syscall.Kill(pid, 0) == nil {
		time.Sleep(20 * time.Millisecond)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	_, port, err := net.SplitHostPort(freeAddr(t))
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(port)
	return n
}

// acked is what one SEND_ACK said.
type acked struct {
	topic, clientMsgID, text string
	seq, msgID               int64
}

// faultSender sends one conversation's messages in a closed loop, each until it is ACKed: a
// group's topic, or to toUser (P2P) when that is set.
type faultSender struct {
	topic  string
	toUser int64
	token  string
	user   int64

	mu    sync.Mutex
	acks  []acked
	times []time.Time // of each ACK
	busy  int         // 50301 answers
	other int         // every other failed attempt (connection lost, timeout)
}

func (s *faultSender) run(ctx context.Context, addr func() string, stop <-chan struct{}) {
	var c *client.Conn
	defer func() {
		if c != nil {
			c.Close()
		}
	}()
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		default:
		}
		cmid := fmt.Sprintf("u%d-%d", s.user, i)
		req := s.message(cmid)
		for {
			if ctx.Err() != nil {
				return
			}
			if c == nil {
				c = s.connect(ctx, addr())
				if c == nil {
					time.Sleep(100 * time.Millisecond)
					continue
				}
			}
			ack, err := c.Send(ctx, req)
			if err == nil {
				s.mu.Lock()
				s.acks = append(s.acks, acked{topic: ack.Topic, clientMsgID: cmid, text: "fault text " + cmid, seq: ack.Seq, msgID: ack.MsgID})
				s.times = append(s.times, time.Now())
				s.mu.Unlock()
				break
			}
			s.mu.Lock()
			if isCode(err, wire.CodeBusy) {
				s.busy++
			} else {
				s.other++
			}
			s.mu.Unlock()
			if !isCode(err, wire.CodeBusy) {
				c.Close()
				c = nil
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// message is the request of client_msg_id cmid, first sent or resent alike.
func (s *faultSender) message(cmid string) wire.SendMessageRequest {
	req := textMessage(s.topic, cmid, "fault text "+cmid)
	if s.toUser != 0 {
		req.Topic, req.ToUser = "", s.toUser
	}
	return req
}

func (s *faultSender) connect(ctx context.Context, addr string) *client.Conn {
	dctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	c, err := client.Dial(dctx, client.Options{Addr: addr, RequestTimeout: 5 * time.Second})
	if err != nil {
		return nil
	}
	if _, err := c.Auth(dctx, s.token, 1); err != nil {
		c.Close()
		return nil
	}
	return c
}

// firstAckAfter is how long after at the sender's next ACK came, -1 when none did.
func (s *faultSender) firstAckAfter(at time.Time) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ts := range s.times {
		if ts.After(at) {
			return ts.Sub(at)
		}
	}
	return -1
}

func TestFaultInjectionLosesAndDuplicatesNothing(t *testing.T) {
	RequireServices(t)
	duration := faultDuration
	if v := os.Getenv("IMD_FAULT_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("IMD_FAULT_DURATION: %v", err)
		}
		duration = d
	}
	svc := startPrivateServices(t)
	env := map[string]string{"IMD_MYSQL_DSN": svc.DSN, "IMD_REDIS_ADDR": svc.RedisAddr}
	first := Start(t, Options{Env: env})
	tenant := first.Tenant
	var cur atomic.Pointer[Server]
	cur.Store(first)
	addr := func() string { return cur.Load().TCPAddr }

	const groups = 4
	senders := make([]*faultSender, groups)
	for g := range groups {
		owner, member := int64(1_960_000+2*g), int64(1_960_001+2*g)
		tok := first.User(owner)
		first.User(member)
		senders[g] = &faultSender{topic: first.Group(int64(1960+g), owner, member), token: tok, user: owner}
	}
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{svc.RedisAddr}, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()

	ctx, cancel := context.WithTimeout(context.Background(), duration+5*time.Minute)
	defer cancel()
	stop := make(chan struct{})
	var running sync.WaitGroup
	for _, s := range senders {
		running.Go(func() { s.run(ctx, addr, stop) })
	}

	flush := func() {
		if err := rc.Do(ctx, rc.B().Flushall().Build()).Error(); err != nil {
			t.Fatalf("FLUSHALL: %v", err)
		}
	}
	faults := []struct {
		name   string
		inject func()
	}{
		{"kill -9 imd, restart", func() {
			cur.Load().Kill()
			cur.Store(Start(t, Options{Tenant: tenant, Env: env}))
		}},
		{"kill -9 redis, restart", func() {
			kill9(t, svc.redisPID)
			time.Sleep(500 * time.Millisecond) // sends meet a Redis that is gone
			svc.services("up")
		}},
		{"FLUSHALL", flush},
		{"advance the month, FLUSHALL right after", func() {
			cur.Load().Advance(Month(1))
			time.Sleep(300 * time.Millisecond)
			flush()
		}},
		{"kill -9 mariadb, restart", func() {
			kill9(t, svc.mariadbPID)
			time.Sleep(500 * time.Millisecond)
			svc.services("up")
		}},
	}
	phase := duration / time.Duration(len(faults)+1)
	type recovery struct {
		name  string
		took  time.Duration // the fault's own time: a restart included
		after []time.Duration
		busy  int // 50301 answers from the fault until every sender was ACKed again
	}
	busyNow := func() int {
		n := 0
		for _, s := range senders {
			s.mu.Lock()
			n += s.busy
			s.mu.Unlock()
		}
		return n
	}
	var recoveries []recovery
	for _, f := range faults {
		time.Sleep(phase)
		began, busyBefore := time.Now(), busyNow()
		f.inject()
		done := time.Now()
		r := recovery{name: f.name, took: done.Sub(began)}
		// Every sender must be ACKed again; the bound is generous for a loaded 2-core box.
		eventually(t, time.Minute, "sends flowing after "+f.name, func() bool {
			for _, s := range senders {
				if s.firstAckAfter(done) < 0 {
					return false
				}
			}
			return true
		})
		for _, s := range senders {
			r.after = append(r.after, s.firstAckAfter(done))
		}
		r.busy = busyNow() - busyBefore
		recoveries = append(recoveries, r)
	}
	time.Sleep(phase)
	close(stop)
	running.Wait()

	srv := cur.Load()
	all, busy, other := gather(senders)
	checkAcked(t, svc.DSN, tenant, all)

	resent := resendAll(t, ctx, srv.TCPAddr, senders)

	t.Logf("fault run of %v: %d senders, %d messages ACKed, %d answers of 50301, %d other failed attempts, %d resends answered alike",
		duration, len(senders), len(all), busy, other, sum(resent))
	for _, r := range recoveries {
		t.Logf("  %-42s fault took %6v; first ACK per sender after it: %v; %d answers of 50301",
			r.name, r.took.Round(time.Millisecond), roundAll(r.after), r.busy)
	}
}

// gather is every ACK of the senders, their 50301 answers and their other failed attempts.
func gather(senders []*faultSender) (all []acked, busy, other int) {
	for _, s := range senders {
		all = append(all, s.acks...)
		busy += s.busy
		other += s.other
	}
	return all, busy, other
}

// resendAll resends every ACKed message of the senders: each must answer its first seq and
// msg_id. It returns how many did.
func resendAll(t *testing.T, ctx context.Context, addr string, senders []*faultSender) []int {
	t.Helper()
	resent := make([]int, len(senders))
	var resends sync.WaitGroup
	for i, s := range senders {
		resends.Go(func() {
			c := s.connect(ctx, addr)
			if c == nil {
				t.Errorf("resend: cannot connect as %d", s.user)
				return
			}
			defer c.Close()
			for _, a := range s.acks {
				ack, err := c.Send(ctx, s.message(a.clientMsgID))
				if err != nil || ack.Seq != a.seq || ack.MsgID != a.msgID {
					t.Errorf("resend of %s: %+v, %v; first ACK was seq %d msg_id %d", a.clientMsgID, ack, err, a.seq, a.msgID)
					return
				}
				resent[i]++
			}
		})
	}
	resends.Wait()
	return resent
}

// checkAcked reads the month tables back: every ACKed message once, with its seq, msg_id and
// content; no client_msg_id stored twice; no seq ACKed twice.
func checkAcked(t *testing.T, dsn, tenant string, all []acked) {
	t.Helper()
	db, err := sql.Open("mysql", strings.Replace(dsn, "/?", "/imd_"+tenant+"?", 1))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	type row struct {
		msgID   int64
		cmid    string
		content string
	}
	stored := map[string]map[int64]row{} // topic → seq → row
	perCMID := map[string]int{}          // topic/cmid → stored messages
	for _, m := range []string{Month(0), Month(1)} {
		rows, err := db.Query("SELECT topic, seqid, message_id, client_msg_id, content FROM im_group_messages_" + m + " WHERE status = 'normal'")
		if err != nil {
			t.Fatalf("read %s: %v", m, err)
		}
		for rows.Next() {
			var topic string
			var seq int64
			var r row
			var cmid, content sql.NullString
			if err := rows.Scan(&topic, &seq, &r.msgID, &cmid, &content); err != nil {
				t.Fatal(err)
			}
			r.cmid, r.content = cmid.String, content.String
			if stored[topic] == nil {
				stored[topic] = map[int64]row{}
			}
			if _, dup := stored[topic][seq]; dup {
				t.Errorf("%s seq %d stored in two months", topic, seq)
			}
			stored[topic][seq] = r
			perCMID[topic+"/"+r.cmid]++
		}
		if err := rows.Close(); err != nil {
			t.Fatal(err)
		}
	}
	for k, n := range perCMID {
		if n > 1 {
			t.Errorf("client_msg_id %s stored %d times", k, n)
		}
	}
	seen := map[string]string{} // topic/seq → cmid
	for _, a := range all {
		k := a.topic + "/" + strconv.FormatInt(a.seq, 10)
		if prev, ok := seen[k]; ok {
			t.Errorf("seq %s ACKed twice: %s and %s", k, prev, a.clientMsgID)
		}
		seen[k] = a.clientMsgID
		r, ok := stored[a.topic][a.seq]
		if !ok {
			t.Errorf("ACKed %s (%s seq %d) is not stored", a.clientMsgID, a.topic, a.seq)
			continue
		}
		if r.msgID != a.msgID || r.cmid != a.clientMsgID || !sameText(r.content, a.text) {
			t.Errorf("%s seq %d stored as msg_id %d cmid %s content %s; ACKed msg_id %d cmid %s", a.topic, a.seq, r.msgID, r.cmid, r.content, a.msgID, a.clientMsgID)
		}
	}
}

func sameText(content, text string) bool {
	var v struct {
		Text string `json:"text"`
	}
	return json.NewDecoder(bytes.NewReader([]byte(content))).Decode(&v) == nil && v.Text == text
}

func sum(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}

func roundAll(ds []time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d.Round(time.Millisecond)
	}
	return out
}
