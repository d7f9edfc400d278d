package e2e

// Query paths of seed 000 §6 through the real binary: reply context across months (seed 000
// §12.7), the hot cache falling back to MySQL when incomplete (seed 000 §12.10), and
// short-term search.

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/imdhq/imd/clients/go/wire"
)

type messagesBody struct {
	Messages []wire.Message `json:"messages"`
}

type errorBody struct {
	Code int `json:"code"`
}

// hotKey is the topic's hot-message ZSET.
func (s *Server) hotKey(topic string) string { return s.topicKeys(topic).HotMessages(topic) }

// querySources reads how many queries each group_message_query_latency source counted.
func (s *Server) querySources() map[string]float64 {
	s.t.Helper()
	out := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(s.Metrics()))
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, `group_message_query_latency_count{source="`)
		if !ok {
			continue
		}
		source, value, _ := strings.Cut(rest, `"} `)
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			s.t.Fatalf("metric line %q: %v", line, err)
		}
		out[source] = v
	}
	return out
}

// wantSources checks which sources the queries since before used, by count.
func wantSources(t *testing.T, before, after map[string]float64, want map[string]float64) {
	t.Helper()
	for _, source := range []string{"redis", "single_month", "cross_month"} {
		if got := after[source] - before[source]; got != want[source] {
			t.Fatalf("queries by source: %v → %v; want %v more", before, after, want)
		}
	}
}

func (s *Server) context(topic string, seq int64, n int) []wire.Message {
	s.t.Helper()
	var out messagesBody
	s.MustAdmin("GET", fmt.Sprintf("/topics/%s/messages/%d/context?n=%d", topic, seq, n), nil, &out)
	return out.Messages
}

func TestShard07ReplyContextAcrossMonths(t *testing.T) {
	srv := Start(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := twoMonthTopic(t, srv, ctx, 7) // seqs 1-30 in this month, 31-60 in the next
	reply := textMessage(c.topic, "reply", "about the last message of last month")
	reply.ReplySeq = 30
	ack, err := c.conns[0].Send(ctx, reply)
	if err != nil {
		t.Fatal(err)
	}
	var got wire.Message
	srv.MustAdmin("GET", fmt.Sprintf("/topics/%s/messages/%d", c.topic, ack.Seq), nil, &got)
	if got.ReplySeq != 30 {
		t.Fatalf("reply stored with reply_seq %d", got.ReplySeq)
	}

	// From the hot cache first, then with the cache gone from the month tables: same answer.
	rc := srv.Redis()
	for _, cached := range []bool{true, false} {
		if !cached {
			if err := rc.Do(ctx, rc.B().Del().Key(srv.hotKey(c.topic)).Build()).Error(); err != nil {
				t.Fatal(err)
			}
		}
		before := srv.querySources()
		around := srv.context(c.topic, got.ReplySeq, 5)
		if !slices.Equal(seqsOf(around), seqRange(25, 35)) {
			t.Fatalf("cached=%v: context of seq 30: %v", cached, seqsOf(around))
		}
		if around[5].Seq != 30 || !strings.Contains(string(around[5].Content), "m0 29") {
			t.Fatalf("cached=%v: target %+v", cached, around[5])
		}
		want := map[string]float64{"cross_month": 1}
		if cached {
			want = map[string]float64{"redis": 1}
		}
		wantSources(t, before, srv.querySources(), want)
	}
	for _, tc := range []struct {
		seq  int64
		n    int
		want []int64
	}{
		{31, 3, seqRange(28, 34)}, // the first message of the new month
		{1, 3, seqRange(1, 4)},    // the topic's start
		{61, 3, seqRange(58, 61)}, // the topic's end (the reply)
		{30, 40, seqRange(1, 61)},
	} {
		if got := seqsOf(srv.context(c.topic, tc.seq, tc.n)); !slices.Equal(got, tc.want) {
			t.Fatalf("context of %d ±%d: %v, want %v", tc.seq, tc.n, got, tc.want)
		}
	}
	for _, tc := range []struct {
		path   string
		status int
		code   int
	}{
		{fmt.Sprintf("/topics/%s/messages/62/context", c.topic), http.StatusNotFound, 40401},
		{fmt.Sprintf("/topics/%s/messages/30/context?n=101", c.topic), http.StatusBadRequest, 40001},
		{fmt.Sprintf("/topics/%s/messages/0/context", c.topic), http.StatusBadRequest, 40001},
		{"/topics/im_group_messages_" + Month(0) + "/messages/1/context", http.StatusBadRequest, 40001},
	} {
		var e errorBody
		if status := srv.Admin("GET", tc.path, nil, &e); status != tc.status || e.Code != tc.code {
			t.Errorf("GET %s: HTTP %d code %d, want %d %d", tc.path, status, e.Code, tc.status, tc.code)
		}
	}
}

func TestShard10IncompleteHotCacheFallsBackToMySQL(t *testing.T) {
	srv := Start(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := twoMonthTopic(t, srv, ctx, 10)
	reader := c.conns[1]
	rc := srv.Redis()
	key := srv.hotKey(c.topic)
	if n, err := rc.Do(ctx, rc.B().Zcard().Key(key).Build()).AsInt64(); err != nil || n != 60 {
		t.Fatalf("hot cache holds %d messages (%v), want 60", n, err)
	}
	drop := func(lo, hi int64) {
		t.Helper()
		cmd := rc.B().Zremrangebyscore().Key(key).Min(strconv.FormatInt(lo, 10)).Max(strconv.FormatInt(hi, 10)).Build()
		if err := rc.Do(ctx, cmd).Error(); err != nil {
			t.Fatal(err)
		}
	}
	latest := reversed(seqRange(11, 60))
	history := func(before int64, limit int, want []int64) {
		t.Helper()
		page, err := reader.History(ctx, c.topic, before, limit)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(seqsOf(page), want) {
			t.Fatalf("history before %d limit %d: %v, want %v", before, limit, seqsOf(page), want)
		}
	}
	sync := func(since int64, limit int, want []int64, more bool) {
		t.Helper()
		msgs, fin, err := reader.SyncMessages(ctx, c.topic, since, limit)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(seqsOf(msgs), want) || fin.HasMore != more {
			t.Fatalf("sync since %d limit %d: %v has_more=%v, want %v %v", since, limit, seqsOf(msgs), fin.HasMore, want, more)
		}
	}

	// The whole topic is cached: pages come from Redis.
	before := srv.querySources()
	history(0, 50, latest)
	sync(0, 200, seqRange(1, 60), false)
	wantSources(t, before, srv.querySources(), map[string]float64{"redis": 2})

	// A hole at 20-25: pages across it go to the month tables and stay complete; pages
	// beside it still come from Redis.
	drop(20, 25)
	before = srv.querySources()
	history(0, 50, latest)
	sync(0, 200, seqRange(1, 60), false)
	sync(15, 7, seqRange(16, 22), true)
	wantSources(t, before, srv.querySources(), map[string]float64{"cross_month": 2, "single_month": 1})
	before = srv.querySources()
	history(0, 30, latest[:30])
	sync(30, 10, seqRange(31, 40), true)
	wantSources(t, before, srv.querySources(), map[string]float64{"redis": 2})

	// The newest message is missing: the newest page and the tail of a catch-up are not
	// covered any more.
	drop(60, 60)
	before = srv.querySources()
	history(0, 10, latest[:10])
	sync(55, 10, seqRange(56, 60), false)
	wantSources(t, before, srv.querySources(), map[string]float64{"single_month": 2})

	// No cache at all.
	if err := rc.Do(ctx, rc.B().Del().Key(key).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	history(0, 50, latest)
	sync(0, 200, seqRange(1, 60), false)

	// The next send caches again.
	sendN(t, ctx, c.conns[0], c.topic, "again", 1)
	if n, err := rc.Do(ctx, rc.B().Zcard().Key(key).Build()).AsInt64(); err != nil || n != 1 {
		t.Fatalf("hot cache after a new send: %d (%v)", n, err)
	}
}

func (s *Server) search(q url.Values) []wire.Message {
	s.t.Helper()
	var out messagesBody
	s.MustAdmin("GET", "/search?"+q.Encode(), nil, &out)
	return out.Messages
}

func TestSearchAcrossTwoMonths(t *testing.T) {
	srv := Start(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now().Add(-time.Minute)
	c := twoMonthTopic(t, srv, ctx, 17) // "m0 0".."m0 29" in this month's table, "m1 0".."m1 29" in the next
	other := newChat(t, srv, ctx, 18, 2, 1)
	sendN(t, ctx, other.conns[0], other.topic, "m1", 3) // the same words in another topic
	end := time.Now().Add(time.Minute)
	ms := func(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }
	nextMonth, err := time.Parse("200601", Month(1))
	if err != nil {
		t.Fatal(err)
	}
	all := reversed(seqRange(1, 60))

	for _, tc := range []struct {
		name string
		q    url.Values
		want []int64 // seqs, newest first
	}{
		// Every message was created now, but the month switched early: the topic's route
		// tells which tables hold the time range, the next month's included.
		{"topic, both tables", url.Values{"topic": {c.topic}, "from": {ms(start)}, "to": {ms(end)}, "limit": {"200"}}, all},
		{"topic and text", url.Values{"topic": {c.topic}, "q": {"m1 2"}, "from": {start.Format(time.RFC3339Nano)}, "to": {end.Format(time.RFC3339Nano)}},
			append(reversed(seqRange(51, 60)), 33)},
		{"limit keeps the newest", url.Values{"topic": {c.topic}, "from": {ms(start)}, "to": {ms(end)}, "limit": {"5"}}, reversed(seqRange(56, 60))},
		{"text matches literally", url.Values{"topic": {c.topic}, "q": {"m_ 1"}, "from": {ms(start)}, "to": {ms(end)}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := srv.search(tc.q)
			if !slices.Equal(seqsOf(got), tc.want) {
				t.Fatalf("search %v: %v, want %v", tc.q, seqsOf(got), tc.want)
			}
		})
	}

	t.Run("tenant-wide over a range touching both months", func(t *testing.T) {
		q := url.Values{"q": {"m1 1"}, "from": {ms(start)}, "to": {ms(nextMonth.Add(24 * time.Hour))}, "limit": {"200"}}
		got := srv.search(q)
		byTopic := map[string][]int64{}
		for _, m := range got {
			byTopic[m.Topic] = append(byTopic[m.Topic], m.Seq)
		}
		// "m1 19".."m1 10" and "m1 1" of the topic, "m1 1" of the other one.
		if !slices.Equal(byTopic[c.topic], append(reversed(seqRange(41, 50)), 32)) || !slices.Equal(byTopic[other.topic], []int64{2}) {
			t.Fatalf("tenant-wide search: %v", byTopic)
		}
		for i := 1; i < len(got); i++ {
			if got[i].CreatedAt > got[i-1].CreatedAt {
				t.Fatalf("not newest first at %d: %v", i, got)
			}
		}
	})

	for _, tc := range []struct {
		name string
		q    url.Values
	}{
		{"from missing", url.Values{"to": {ms(end)}}},
		{"to before from", url.Values{"from": {ms(end)}, "to": {ms(start)}}},
		{"four calendar months", url.Values{"from": {ms(start)}, "to": {ms(nextMonth.AddDate(0, 3, 0))}}},
		{"bad time", url.Values{"from": {"yesterday"}, "to": {ms(end)}}},
		{"bad topic", url.Values{"topic": {"grp_01"}, "from": {ms(start)}, "to": {ms(end)}}},
		{"bad limit", url.Values{"from": {ms(start)}, "to": {ms(end)}, "limit": {"201"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var e errorBody
			if status := srv.Admin("GET", "/search?"+tc.q.Encode(), nil, &e); status != http.StatusBadRequest || e.Code != 40001 {
				t.Fatalf("HTTP %d code %d, want 400 40001", status, e.Code)
			}
		})
	}
}

func reversed(s []int64) []int64 {
	out := slices.Clone(s)
	slices.Reverse(out)
	return out
}
