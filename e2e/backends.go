package e2e

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/redis/rueidis"

	"github.com/imdhq/imd/adapters/redis"
)

// Keys is the builder of the server's tenant's Redis keys, which lie under the tenant's tag
// and its slot groups' (DESIGN §11).
func (s *Server) Keys() redis.Keys {
	s.t.Helper()
	k, err := redis.KeysOf(s.Tenant)
	if err != nil {
		s.t.Fatal(err)
	}
	return k
}

// keyPattern matches the tenant's keys whose name after the hash tag matches pattern, under
// the tenant's own tag and every slot group's.
func (s *Server) keyPattern(pattern string) string { return "im:{" + s.Tenant + "[}~]*:" + pattern }

// delKeys deletes keys one DEL each: on a cluster they lie in many slots.
func (s *Server) delKeys(rc rueidis.Client, keys []string) {
	s.t.Helper()
	cmds := make(rueidis.Commands, len(keys))
	for i, key := range keys {
		cmds[i] = rc.B().Del().Key(key).Build()
	}
	for _, r := range rc.DoMulti(context.Background(), cmds...) {
		if err := r.Error(); err != nil {
			s.t.Fatal(err)
		}
	}
}

// TenantDB opens the server's tenant database directly, for assertions on what is stored.
func (s *Server) TenantDB() *sql.DB {
	s.t.Helper()
	cfg, err := mysql.ParseDSN(RequireServices(s.t).MySQLDSN)
	if err != nil {
		s.t.Fatal(err)
	}
	cfg.DBName = "imd_" + s.Tenant
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() { db.Close() })
	return db
}

// Redis opens a client on the server's Redis (a cluster when it runs on one), for fault
// injection (deleting keys).
func (s *Server) Redis() rueidis.Client {
	s.t.Helper()
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: strings.Split(s.env["IMD_REDIS_ADDR"], ","), DisableCache: true})
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(c.Close)
	return c
}

// SeqsInTable lists the seqs of a topic stored in one month table, ascending.
func (s *Server) SeqsInTable(db *sql.DB, month, topic string) []int64 {
	s.t.Helper()
	rows, err := db.Query(fmt.Sprintf("SELECT seqid FROM im_group_messages_%s WHERE topic = ? ORDER BY seqid", month), topic)
	if err != nil {
		s.t.Fatalf("read %s: %v", month, err)
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var v int64
		if err := rows.Scan(&v); err != nil {
			s.t.Fatal(err)
		}
		out = append(out, v)
	}
	return out
}

// Segment is one row of the route mirror.
type Segment struct {
	Month          string
	MinSeq, MaxSeq int64
	Count          int64
}

// Mirror reads the topic's route mirror rows.
func (s *Server) Mirror(db *sql.DB, topic string) []Segment {
	s.t.Helper()
	rows, err := db.Query("SELECT shard_month, min_seq, max_seq, message_count FROM im_group_message_topic_shards WHERE topic = ? ORDER BY shard_month", topic)
	if err != nil {
		s.t.Fatal(err)
	}
	defer rows.Close()
	var out []Segment
	for rows.Next() {
		var g Segment
		if err := rows.Scan(&g.Month, &g.MinSeq, &g.MaxSeq, &g.Count); err != nil {
			s.t.Fatal(err)
		}
		out = append(out, g)
	}
	return out
}

// Advance moves the active month forward through the admin API and returns it.
func (s *Server) Advance(month string) string {
	s.t.Helper()
	var out struct {
		ActiveMonth string `json:"active_month"`
	}
	s.MustAdmin("POST", "/shards/advance", map[string]string{"month": month}, &out)
	return out.ActiveMonth
}

// ActiveMonth reads the tenant's active month from Redis: the newest of its slot groups'
// (ports.MonthState.Active).
func (s *Server) ActiveMonth(c rueidis.Client) string {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	m, found, err := redis.NewMonthState(c).Active(ctx, s.Tenant)
	if err != nil {
		s.t.Fatal(err)
	}
	if !found {
		s.t.Fatal("no slot group of the tenant holds an active month")
	}
	return m.String()
}

// topicKeys is the Redis key builder of a topic's slot group, whose tag its seq counter,
// idempotency records, route and hot cache carry (DESIGN §11).
func (s *Server) topicKeys(topic string) redis.Keys {
	s.t.Helper()
	return s.Keys().Group(redis.TopicGroup(topic))
}

// Month returns the UTC month n months from now as YYYYMM.
func Month(n int) string {
	now := time.Now().UTC()
	return time.Date(now.Year(), now.Month()+time.Month(n), 1, 0, 0, 0, 0, time.UTC).Format("200601")
}
