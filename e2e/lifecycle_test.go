package e2e

// The shard lifecycle's background work against the real binary, MariaDB and Redis (seed 000
// §3.4 rules 2–4, §5.3, §10): a failed route update is repaired from the queue, a tenant's
// routes are rebuilt from the mirror on demand and on start, and a late write into a sealed
// month lands on the compensation list instead of being lost.

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/imdhq/imd/adapters/redis"
	"github.com/imdhq/imd/adapters/snowflake"
	"github.com/imdhq/imd/clients/go/wire"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/seq"
)

// fastRepairs makes the repair loop work its queue five times a second.
var fastRepairs = map[string]string{"IMD_SHARD_ROUTE_REPAIR_INTERVAL": "200ms"}

// eventually polls cond until it holds or limit passes.
func eventually(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, limit)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// routeMeta reads a topic's route from Redis as month → "min,max,count"; nil when the route
// key is not a ZSET (missing or damaged).
func (s *Server) routeMeta(rc rueidis.Client, topic string) map[string]string {
	s.t.Helper()
	ctx := context.Background()
	k := s.topicKeys(topic)
	kind, err := rc.Do(ctx, rc.B().Type().Key(k.Route(topic)).Build()).ToString()
	if err != nil {
		s.t.Fatal(err)
	}
	if kind != "zset" {
		return nil
	}
	months, err := rc.Do(ctx, rc.B().Zrange().Key(k.Route(topic)).Min("0").Max("-1").Build()).AsStrSlice()
	if err != nil {
		s.t.Fatal(err)
	}
	out := map[string]string{}
	for _, m := range months {
		meta, err := rc.Do(ctx, rc.B().Hget().Key(k.RouteMeta(topic)).Field(m).Build()).ToString()
		if err != nil {
			s.t.Fatalf("route_meta %s of %s: %v", m, topic, err)
		}
		f := strings.Split(meta, ",")
		out[m] = strings.Join(f[:3], ",")
	}
	return out
}

// metricValue sums the samples of a metric whose labels contain every given pair.
func (s *Server) metricValue(name string, labels ...string) float64 {
	s.t.Helper()
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `(\{[^}]*\})? ([0-9.e+-]+)$`)
	total := 0.0
	for _, m := range re.FindAllStringSubmatch(s.Metrics(), -1) {
		match := true
		for i := 0; i+1 < len(labels); i += 2 {
			if !strings.Contains(m[1], labels[i]+`="`+labels[i+1]+`"`) {
				match = false
			}
		}
		if match {
			v, _ := strconv.ParseFloat(m[2], 64)
			total += v
		}
	}
	return total
}

func TestLifecycleFailedRouteUpdateIsRepairedFromTheQueue(t *testing.T) {
	srv := Start(t, Options{Env: fastRepairs})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := newChat(t, srv, ctx, 21, 2, 1)
	sendN(t, ctx, c.conns[0], c.topic, "a", 3)
	srv.MustAdmin("POST", "/topics/"+c.topic+"/route/rebuild", nil, nil)
	rc := srv.Redis()
	if got := srv.routeMeta(rc, c.topic); got[Month(0)] != "1,3,3" {
		t.Fatalf("route before the damage: %v", got)
	}

	// A route key of the wrong type makes the post-COMMIT update fail; the send still succeeds.
	routeKey := srv.topicKeys(c.topic).Route(c.topic)
	for _, cmd := range []rueidis.Completed{rc.B().Del().Key(routeKey).Build(), rc.B().Set().Key(routeKey).Value("damaged").Build()} {
		if err := rc.Do(ctx, cmd).Error(); err != nil {
			t.Fatal(err)
		}
	}
	repairedBefore := srv.metricValue("group_message_route_repair_total")
	ack := sendN(t, ctx, c.conns[0], c.topic, "b", 1)[0]
	if ack.Seq != 4 {
		t.Fatalf("send after the damage got seq %d", ack.Seq)
	}

	// The repair loop rebuilds the route from the MySQL mirror, replacing the damaged key.
	eventually(t, 10*time.Second, "route repaired", func() bool {
		return srv.routeMeta(rc, c.topic)[Month(0)] == "1,4,4"
	})
	// A repair pass counts its topics once it has written their routes and finished their
	// tickets, so the counter can trail the route by a Redis round trip.
	eventually(t, 10*time.Second, "the route repaired through the repair queue", func() bool {
		return srv.metricValue("group_message_route_repair_total") > repairedBefore
	})
	eventually(t, 5*time.Second, "repair backlog empty", func() bool {
		return srv.metricValue("group_message_route_repair_backlog", "tenant", srv.Tenant) == 0
	})
	page, err := c.conns[0].History(ctx, c.topic, 0, 50)
	if err != nil || !slices.Equal(seqsOf(page), []int64{4, 3, 2, 1}) {
		t.Fatalf("history after the repair: %v %v", seqsOf(page), err)
	}
}

// deleteRoutes removes every route key of the tenant, and the marker saying they were built
// when withMarker is set, as a Redis that lost them would.
func (s *Server) deleteRoutes(rc rueidis.Client, withMarker bool) {
	s.t.Helper()
	ctx := context.Background()
	// Routes lie in the topics' slot groups, the repair queue and the marker under the
	// tenant's own tag (DESIGN §11).
	keys, err := rc.Do(ctx, rc.B().Keys().Pattern(s.keyPattern("groupmsg:route:*")).Build()).AsStrSlice()
	if err != nil {
		s.t.Fatal(err)
	}
	metas, err := rc.Do(ctx, rc.B().Keys().Pattern(s.keyPattern("groupmsg:route_meta:*")).Build()).AsStrSlice()
	if err != nil {
		s.t.Fatal(err)
	}
	keys = append(keys, metas...)
	if withMarker {
		keys = append(keys, "im:{"+s.Tenant+"}:groupmsg:routes_built")
	}
	for _, key := range keys { // one at a time: they lie in several slots
		if err := rc.Do(ctx, rc.B().Del().Key(key).Build()).Error(); err != nil {
			s.t.Fatal(err)
		}
	}
}

func TestLifecycleTenantRoutesAreRebuiltFromTheMirror(t *testing.T) {
	srv := Start(t, Options{Env: fastRepairs})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var topics []string
	var chats []chat
	for g := int64(31); g <= 33; g++ {
		c := newChat(t, srv, ctx, g, 2, 1)
		sendN(t, ctx, c.conns[0], c.topic, "m0", 2)
		topics, chats = append(topics, c.topic), append(chats, c)
	}
	srv.Advance(Month(1))
	for _, c := range chats {
		sendN(t, ctx, c.conns[0], c.topic, "m1", 1)
	}
	want := map[string]string{Month(0): "1,2,2", Month(1): "3,3,1"}
	rc := srv.Redis()

	srv.deleteRoutes(rc, false)
	var out struct {
		Topics int `json:"topics"`
	}
	srv.MustAdmin("POST", "/routes/rebuild", nil, &out)
	if out.Topics != len(topics) {
		t.Fatalf("rebuilt %d topics, want %d", out.Topics, len(topics))
	}
	for _, topic := range topics {
		if got := srv.routeMeta(rc, topic); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("route of %s after the admin rebuild: %v, want %v", topic, got, want)
		}
	}

	// Redis lost the routes and the marker (FLUSHALL, a new Redis) while no node ran: the next
	// node to start rebuilds them all, before any query asks.
	srv.Stop()
	srv.deleteRoutes(rc, true)
	Start(t, Options{Tenant: srv.Tenant, Env: map[string]string{"IMD_NODE_ID": "2"}})
	for _, topic := range topics {
		eventually(t, 10*time.Second, "route of "+topic+" rebuilt at start", func() bool {
			return fmt.Sprint(srv.routeMeta(rc, topic)) == fmt.Sprint(want)
		})
	}
}

func TestLifecycleLateWriteIntoSealedMonthIsCompensated(t *testing.T) {
	srv := Start(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := newChat(t, srv, ctx, 41, 2, 1)
	sendN(t, ctx, c.conns[0], c.topic, "x", 1)

	// Fix the next message's seq and month in Redis, then let the month close before it is
	// written (see TestShard02).
	rc := srv.Redis()
	ids, err := snowflake.New(901)
	if err != nil {
		t.Fatal(err)
	}
	msgID, _ := ids.NextID()
	req := textMessage(c.topic, "late", "late")
	hash := message.Draft{ClientMsgID: req.ClientMsgID, Type: req.Type, Content: req.Content}.Hash()
	fixed, err := redis.NewSeqAllocator(rc, 0).Allocate(ctx, srv.Tenant, seq.Request{Topic: c.topic, From: 410_001, ClientMsgID: "late", MsgID: msgID, Hash: hash})
	if err != nil || fixed.Month.String() != Month(0) {
		t.Fatalf("allocation %+v %v", fixed, err)
	}
	srv.Advance(Month(1))
	db := srv.TenantDB()
	if _, err := db.ExecContext(ctx, "UPDATE im_group_message_shards SET status = 'sealed' WHERE shard_month = ?", Month(0)); err != nil {
		t.Fatal(err)
	}

	for attempt := range 2 { // the client retries with the same client_msg_id
		if _, err := c.conns[0].Send(ctx, req); !isCode(err, wire.CodeBusy) {
			t.Fatalf("attempt %d into a sealed month: %v, want 50301", attempt, err)
		}
	}
	var list struct {
		Total   int64 `json:"total"`
		Entries []struct {
			ShardMonth string       `json:"shard_month"`
			Reason     string       `json:"reason"`
			Message    wire.Message `json:"message"`
		} `json:"entries"`
	}
	srv.MustAdmin("GET", "/compensation", nil, &list)
	if list.Total != 1 || len(list.Entries) != 1 {
		t.Fatalf("compensation list %+v; want the message once", list)
	}
	e := list.Entries[0]
	if e.ShardMonth != Month(0) || e.Message.MsgID != msgID || e.Message.Seq != fixed.Seq || e.Message.ClientMsgID != "late" ||
		!strings.Contains(string(e.Message.Content), "late") || !strings.Contains(e.Reason, "sealed") {
		t.Fatalf("compensation entry %+v", e)
	}
	if got := srv.SeqsInTable(db, Month(0), c.topic); !slices.Equal(got, []int64{1}) {
		t.Fatalf("the sealed month must not take the write: %v", got)
	}
	if got := srv.metricValue("group_message_dead_letter_total"); got != 1 {
		t.Fatalf("group_message_dead_letter_total = %v, want 1", got)
	}
	// Another node of the deployment reports the waiting entry from its first shard pass.
	other := Start(t, Options{Tenant: srv.Tenant})
	eventually(t, 30*time.Second, "group_message_compensation_backlog is 1", func() bool {
		return other.metricValue("group_message_compensation_backlog", "tenant", srv.Tenant) == 1
	})
	other.Stop()
	// New messages are not held up by it.
	if ack := sendN(t, ctx, c.conns[0], c.topic, "after", 1)[0]; ack.Seq != fixed.Seq+1 {
		t.Fatalf("next message got seq %d", ack.Seq)
	}

	// Archiving is for sealed months only.
	if code := srv.Admin("POST", "/shards/"+Month(1)+"/archive", nil, nil); code != http.StatusConflict {
		t.Fatalf("archiving the active month: HTTP %d, want 409", code)
	}
	var archived map[string]string
	srv.MustAdmin("POST", "/shards/"+Month(0)+"/archive", nil, &archived)
	var status string
	if err := db.QueryRowContext(ctx, "SELECT status FROM im_group_message_shards WHERE shard_month = ?", Month(0)).Scan(&status); err != nil || status != "archived" {
		t.Fatalf("catalog status %q %v, want archived", status, err)
	}
	if got := srv.metricValue("group_message_archive_ops_total", "op", "archive", "status", "ok"); got != 1 {
		t.Fatalf("group_message_archive_ops_total{op=archive,status=ok} = %v, want 1", got)
	}
}
