// Package legacygen writes a realistic legacy table im_group_messages into a tenant database,
// for migration tests, benchmarks and `imctl migrate gen` (seed 000 §9): many group and P2P
// topics of very different sizes, each active for part of a year, with per-topic seqs in time
// order, mentions, replies and media, some recalled, edited and deleted rows, and users' delete
// ranges in im_dellog. The same Spec and Seed always give the same rows.
package legacygen

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/topic"
	legacysql "github.com/imdhq/imd/sql/legacy"
)

// Spec describes the data; zero fields take the defaults.
type Spec struct {
	Rows   int // messages in all
	Groups int // group topics
	Pairs  int // P2P topics
	Months int // the span, ending at End
	// End is the newest possible created_at (default: a minute ago); the oldest is Months
	// earlier.
	End  time.Time
	Seed uint64
	// Shares of rows recalled, deleted for everyone and edited.
	RecallRate, DeleteRate, EditRate float64
	// DellogRanges is how many user delete ranges go to im_dellog.
	DellogRanges int
	// FirstGroupID and FirstUserID number the groups and users.
	FirstGroupID, FirstUserID int64
	// MaxMembers bounds a group's members, owner included (at least 2).
	MaxMembers int
	// IDs composes the msg_ids an earlier deployment issued (the snowflake adapter; required).
	IDs Composer
}

// Composer builds the id a generator would have issued at t with the given sequence and
// machine id.
type Composer interface {
	Compose(t time.Time, sequence, machineID int) (int64, error)
}

func (s Spec) withDefaults() Spec {
	set := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	set(&s.Rows, 100_000)
	set(&s.Groups, 200)
	set(&s.Pairs, 50)
	set(&s.Months, 12)
	set(&s.DellogRanges, 100)
	set(&s.MaxMembers, 12)
	s.MaxMembers = max(s.MaxMembers, 2)
	if s.End.IsZero() {
		s.End = time.Now().Add(-time.Minute)
	}
	s.End = s.End.UTC().Truncate(time.Millisecond)
	if s.Seed == 0 {
		s.Seed = 1
	}
	if s.RecallRate == 0 {
		s.RecallRate = 0.02
	}
	if s.DeleteRate == 0 {
		s.DeleteRate = 0.01
	}
	if s.EditRate == 0 {
		s.EditRate = 0.01
	}
	if s.FirstGroupID <= 0 {
		s.FirstGroupID = 1000
	}
	if s.FirstUserID <= 0 {
		s.FirstUserID = 100_000
	}
	return s
}

// Topic is one generated conversation: who is in it and how many rows it got.
type Topic struct {
	Name    string
	GroupID int64   // 0 for P2P topics
	Owner   int64   // the group owner, or the smaller user of a pair
	Members []int64 // every member, owner included
	Rows    int
	MaxSeq  int64
}

// Summary is what Generate wrote.
type Summary struct {
	Topics []Topic
	Rows   int
	Dellog int
	From   time.Time // the oldest created_at
	To     time.Time // the newest created_at
}

// Users lists every user of the topics once, ascending.
func (s Summary) Users() []int64 {
	var out []int64
	for _, t := range s.Topics {
		out = append(out, t.Members...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// legacyMachine is the sonyflake machine id of the generated msg_ids: an id no imd node is
// configured with, at times in the past, so they never collide with ids imd issues.
const legacyMachine = 1023

// insertRows is the rows of one INSERT.
const insertRows = 1000

// CreateTable creates the legacy table in db (a tenant database) if it does not exist.
func CreateTable(ctx context.Context, db *sql.DB) error {
	if _, err := db.ExecContext(ctx, legacysql.Schema); err != nil {
		return fmt.Errorf("create legacy table: %w", err)
	}
	return nil
}

// Generate creates the legacy table if needed and writes spec's rows and delete ranges into it.
func Generate(ctx context.Context, db *sql.DB, spec Spec) (Summary, error) {
	spec = spec.withDefaults()
	if err := CreateTable(ctx, db); err != nil {
		return Summary{}, err
	}
	g, err := newGenerator(spec)
	if err != nil {
		return Summary{}, err
	}
	rows, err := g.rows()
	if err != nil {
		return Summary{}, err
	}
	// The delete ranges go first: a database without im_dellog is no tenant database, and
	// then nothing is written.
	ranges := g.dellog()
	if err := insertDellog(ctx, db, ranges); err != nil {
		return Summary{}, err
	}
	if err := Insert(ctx, db, rows); err != nil {
		return Summary{}, err
	}
	sum := Summary{Topics: g.topics, Rows: len(rows), Dellog: len(ranges)}
	if len(rows) > 0 {
		sum.From, sum.To = rows[0].CreatedAt, rows[len(rows)-1].CreatedAt
	}
	return sum, nil
}

// Row is one legacy row; nil pointers and empty strings are SQL NULL where the column allows.
type Row struct {
	MessageID   int64
	Topic       string
	GroupID     int64
	Seq         int64
	From        int64
	ClientMsgID string
	Type        string
	Status      string
	Content     *string
	Mentions    *string
	MentionAll  bool
	ReplySeq    int64
	Version     int
	RecalledAt  *time.Time
	RecalledBy  int64
	DeletedAt   *time.Time
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// Insert writes rows into the legacy table, insertRows per statement.
func Insert(ctx context.Context, db *sql.DB, rows []Row) error {
	const cols = "(message_id, topic, group_id, seqid, from_user, client_msg_id, msg_type, status, content, " +
		"mentioned_user_ids, mention_all, reply_seqid, content_size, version, recalled_at, recalled_by, deleted_at, created_at, updated_at)"
	for chunk := range slices.Chunk(rows, insertRows) {
		var sb strings.Builder
		sb.WriteString("INSERT INTO im_group_messages " + cols + " VALUES ")
		args := make([]any, 0, 19*len(chunk))
		for i, r := range chunk {
			if i > 0 {
				sb.WriteString(", ")
			}
			sb.WriteString("(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
			size := 0
			if r.Content != nil {
				size = len(*r.Content)
			}
			args = append(args, r.MessageID, r.Topic, r.GroupID, r.Seq, r.From, nullString(r.ClientMsgID), r.Type, r.Status,
				r.Content, r.Mentions, r.MentionAll, nullInt(r.ReplySeq), size, r.Version, r.RecalledAt, nullInt(r.RecalledBy),
				r.DeletedAt, r.CreatedAt, r.UpdatedAt)
		}
		if _, err := db.ExecContext(ctx, sb.String(), args...); err != nil {
			return fmt.Errorf("insert legacy rows: %w", err)
		}
	}
	return nil
}

func nullString(s string) sql.NullString { return sql.NullString{String: s, Valid: s != ""} }
func nullInt(v int64) sql.NullInt64      { return sql.NullInt64{Int64: v, Valid: v != 0} }

// DellogRange is one user's delete range [Low, Hi) of a topic.
type DellogRange struct {
	Topic     string
	User      int64
	Low, Hi   int64
	CreatedAt time.Time
}

func insertDellog(ctx context.Context, db *sql.DB, ranges []DellogRange) error {
	for chunk := range slices.Chunk(ranges, insertRows) {
		var sb strings.Builder
		sb.WriteString("INSERT INTO im_dellog (topic, deletedfor, low, hi, created_at) VALUES ")
		args := make([]any, 0, 5*len(chunk))
		for i, r := range chunk {
			if i > 0 {
				sb.WriteString(", ")
			}
			sb.WriteString("(?, ?, ?, ?, ?)")
			args = append(args, r.Topic, r.User, r.Low, r.Hi, r.CreatedAt)
		}
		if _, err := db.ExecContext(ctx, sb.String(), args...); err != nil {
			return fmt.Errorf("insert delete ranges: %w", err)
		}
	}
	return nil
}

// generator draws everything from one seeded source.
type generator struct {
	spec   Spec
	rnd    *rand.Rand
	ids    Composer
	from   time.Time
	topics []Topic
	// windows are the topics' active periods, by index.
	windows [][2]time.Time
}

func newGenerator(spec Spec) (*generator, error) {
	if spec.IDs == nil {
		return nil, errors.New("legacygen: Spec.IDs is required")
	}
	g := &generator{
		spec: spec, rnd: rand.New(rand.NewPCG(spec.Seed, spec.Seed^0x5eed)), ids: spec.IDs,
		from: spec.End.AddDate(0, -spec.Months, 0),
	}
	g.layout()
	return g, nil
}

// layout makes the topics, their members and their active periods: most run all year, some
// started later, some went quiet.
func (g *generator) layout() {
	user := g.spec.FirstUserID
	for i := range g.spec.Groups {
		n := 2 + g.rnd.IntN(g.spec.MaxMembers-1)
		members := make([]int64, n)
		for j := range members {
			members[j] = user
			user++
		}
		id := g.spec.FirstGroupID + int64(i)
		g.topics = append(g.topics, Topic{Name: topic.ForGroup(id), GroupID: id, Owner: members[0], Members: members})
	}
	for range g.spec.Pairs {
		a, b := user, user+1
		user += 2
		g.topics = append(g.topics, Topic{Name: topic.ForPair(a, b), Owner: a, Members: []int64{a, b}})
	}
	span := g.spec.End.Sub(g.from)
	for range g.topics {
		start, end := g.from, g.spec.End
		if g.rnd.Float64() < 0.3 {
			start = start.Add(time.Duration(g.rnd.Float64() * float64(span) / 2))
		}
		if g.rnd.Float64() < 0.2 {
			end = start.Add(time.Duration((0.3 + 0.7*g.rnd.Float64()) * float64(end.Sub(start))))
		}
		g.windows = append(g.windows, [2]time.Time{start, end})
	}
}

// rows draws every message, sized by a Zipf-like weight per topic (a few busy groups, a long
// tail of quiet ones), and returns them in created_at order.
func (g *generator) rows() ([]Row, error) {
	weights := make([]float64, len(g.topics))
	total := 0.0
	for i := range weights {
		weights[i] = 1 / math.Pow(float64(i+1), 0.8)
		total += weights[i]
	}
	counts := make([]int, len(g.topics))
	assigned := 0
	for i, w := range weights {
		counts[i] = max(1, int(float64(g.spec.Rows)*w/total))
		assigned += counts[i]
	}
	for i := 0; assigned != g.spec.Rows; i = (i + 1) % len(counts) {
		switch {
		case assigned < g.spec.Rows:
			counts[i]++
			assigned++
		case counts[i] > 1:
			counts[i]--
			assigned--
		}
	}
	var out []Row
	for i := range g.topics {
		out = append(out, g.topicRows(i, counts[i])...)
	}
	slices.SortFunc(out, func(a, b Row) int { return a.CreatedAt.Compare(b.CreatedAt) })
	if err := g.assignIDs(out); err != nil {
		return nil, err
	}
	return out, nil
}

// topicRows draws n messages of topic i at increasing times within its window.
func (g *generator) topicRows(i, n int) []Row {
	t := &g.topics[i]
	start, end := g.windows[i][0], g.windows[i][1]
	times := make([]time.Time, n)
	for j := range times {
		times[j] = start.Add(time.Duration(g.rnd.Float64() * float64(end.Sub(start)))).Truncate(time.Millisecond)
	}
	slices.SortFunc(times, time.Time.Compare)
	for j := 1; j < n; j++ {
		// Strictly increasing, so a topic's seqs and months never disagree.
		if !times[j].After(times[j-1]) {
			times[j] = times[j-1].Add(time.Millisecond)
		}
	}
	rows := make([]Row, n)
	for j := range rows {
		seq := int64(j + 1)
		from := t.Members[g.rnd.IntN(len(t.Members))]
		r := Row{
			Topic: t.Name, GroupID: t.GroupID, Seq: seq, From: from,
			ClientMsgID: fmt.Sprintf("legacy-%d-%d", from, seq), Type: "text", Status: "normal", Version: 1,
			CreatedAt: times[j], UpdatedAt: times[j],
		}
		g.fill(&r, t)
		rows[j] = r
	}
	t.Rows, t.MaxSeq = n, int64(n)
	return rows
}

// words make up message texts; the Chinese ones check that bytes survive the copy.
var words = []string{"hello", "ok", "meeting", "tomorrow", "deploy", "lunch?", "👍", "收到", "明天见", "月表迁移", "seq", "ship it"}

// fill draws the content and what happened to the message later.
func (g *generator) fill(r *Row, t *Topic) {
	n := 1 + g.rnd.IntN(20)
	parts := make([]string, n)
	for k := range parts {
		parts[k] = words[g.rnd.IntN(len(words))]
	}
	text := strings.Join(parts, " ")
	content := fmt.Sprintf(`{"text":%q}`, text)
	switch p := g.rnd.Float64(); {
	case p < 0.05:
		r.Type = "image"
		content = fmt.Sprintf(`{"key":"legacy/%s/%d.jpg","w":640,"h":480}`, t.Name, r.Seq)
	case p < 0.08 && t.GroupID != 0:
		m := t.Members[g.rnd.IntN(len(t.Members))]
		mentions := fmt.Sprintf("[%d]", m)
		r.Mentions = &mentions
		content = fmt.Sprintf(`{"text":"@%d %s"}`, m, text)
	case p < 0.09 && t.GroupID != 0:
		r.MentionAll = true
	}
	if r.Seq > 1 && g.rnd.Float64() < 0.05 {
		r.ReplySeq = 1 + g.rnd.Int64N(r.Seq-1)
	}
	r.Content = &content
	later := r.CreatedAt.Add(time.Duration(1+g.rnd.IntN(600)) * time.Second)
	switch p := g.rnd.Float64(); {
	case p < g.spec.RecallRate:
		r.Status, r.Content, r.Version = "recalled", nil, 2
		r.RecalledAt, r.RecalledBy, r.UpdatedAt = &later, r.From, later
	case p < g.spec.RecallRate+g.spec.DeleteRate:
		r.Status, r.Content, r.Version = "deleted", nil, 2
		r.DeletedAt, r.UpdatedAt = &later, later
	case p < g.spec.RecallRate+g.spec.DeleteRate+g.spec.EditRate:
		edited := fmt.Sprintf(`{"text":%q}`, text+" (edited)")
		r.Content, r.Version, r.UpdatedAt = &edited, 2, later
	}
}

// assignIDs gives the rows (in created_at order) sonyflake msg_ids of their creation time, so
// READ by msg_id finds their month as it does for imd's own ids.
func (g *generator) assignIDs(rows []Row) error {
	var last time.Time
	seq := 0
	for i := range rows {
		t := rows[i].CreatedAt
		if t.Equal(last) {
			seq++
		} else {
			last, seq = t, 0
		}
		id, err := g.ids.Compose(t, seq, legacyMachine)
		if err != nil {
			// Times before the sonyflake epoch, or 4096 rows in one millisecond.
			return fmt.Errorf("msg_id of %s seq %d: %w", rows[i].Topic, rows[i].Seq, err)
		}
		rows[i].MessageID = id
	}
	return nil
}

// dellog draws users' delete ranges: a member hides a run of a topic's seqs.
func (g *generator) dellog() []DellogRange {
	out := make([]DellogRange, 0, g.spec.DellogRanges)
	for range g.spec.DellogRanges {
		i := g.rnd.IntN(len(g.topics))
		t := g.topics[i]
		if t.MaxSeq < 2 {
			continue
		}
		low := 1 + g.rnd.Int64N(t.MaxSeq)
		hi := min(low+1+g.rnd.Int64N(20), t.MaxSeq+1)
		out = append(out, DellogRange{
			Topic: t.Name, User: t.Members[g.rnd.IntN(len(t.Members))], Low: low, Hi: hi, CreatedAt: g.spec.End,
		})
	}
	slices.SortFunc(out, func(a, b DellogRange) int { return cmp.Compare(a.Topic, b.Topic) })
	return out
}

// FromMessages turns messages into legacy rows, for tests that write specific rows.
func FromMessages(msgs []message.Message) []Row {
	out := make([]Row, len(msgs))
	for i, m := range msgs {
		r := Row{
			MessageID: m.MsgID, Topic: m.Topic, GroupID: m.GroupID, Seq: m.Seq, From: m.From, ClientMsgID: m.ClientMsgID,
			Type: m.Type, Status: string(m.Status), MentionAll: m.MentionAll, ReplySeq: m.ReplySeq, Version: m.Version,
			CreatedAt: m.CreatedAt.UTC(), UpdatedAt: m.CreatedAt.UTC(),
		}
		if m.Content != nil {
			c := string(m.Content)
			r.Content = &c
		}
		if len(m.Mentions) > 0 {
			raw, _ := json.Marshal(m.Mentions) // []int64 always encodes
			s := string(raw)
			r.Mentions = &s
		}
		out[i] = r
	}
	return out
}
