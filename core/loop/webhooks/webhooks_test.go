package webhooks_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/memory"
	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/social"
	domain "github.com/imdhq/imd/core/domain/webhook"
	"github.com/imdhq/imd/core/loop/webhooks"
	"github.com/imdhq/imd/core/usecase/conversation"
	"github.com/imdhq/imd/core/usecase/history"
)

const tenant = "acme"

var t0 = time.Date(2030, 2, 3, 4, 5, 6, 0, time.UTC)

// backlog stands in for the route mirror and the month tables: messages by topic.
type backlog struct {
	mu     sync.Mutex
	topics map[string][]message.Message
	broken map[string]bool // topics whose reads fail
}

func (b *backlog) add(topic string, seq int64, at time.Time, status message.Status) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.topics[topic] = append(b.topics[topic], message.Message{Topic: topic, Seq: seq, MsgID: seq, Type: "text",
		Content: json.RawMessage(`{"text":"hi"}`), Status: status, CreatedAt: at, Month: month.Of(at)})
	slices.SortFunc(b.topics[topic], func(x, y message.Message) int { return int(x.Seq - y.Seq) })
}

func (b *backlog) TopicsSince(_ context.Context, _ string, m month.Month, since time.Time, after string, limit int) ([]string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for t, ms := range b.topics {
		if t > after && slices.ContainsFunc(ms, func(x message.Message) bool { return x.Month == m && !x.CreatedAt.Before(since) }) {
			out = append(out, t)
		}
	}
	slices.Sort(out)
	return out[:min(len(out), limit)], nil
}

func (b *backlog) Sync(_ context.Context, r history.SyncRequest) (history.SyncResult, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.broken[r.Topic] {
		return history.SyncResult{}, errors.New("month table unreachable")
	}
	res := history.SyncResult{LastSeq: r.Since}
	for _, m := range b.topics[r.Topic] {
		if m.Seq <= r.Since {
			continue
		}
		if len(res.Messages) == r.Limit {
			res.HasMore = true
			break
		}
		res.Messages = append(res.Messages, m)
		res.LastSeq = m.Seq
	}
	return res, nil
}

// History pages back from Before, newest first, leaving tombstones out as history does.
func (b *backlog) History(_ context.Context, r history.HistoryRequest) ([]message.Message, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.broken[r.Topic] {
		return nil, errors.New("month table unreachable")
	}
	var out []message.Message
	ms := b.topics[r.Topic]
	for i := len(ms) - 1; i >= 0 && len(out) < r.Limit; i-- {
		if (r.Before == 0 || ms[i].Seq < r.Before) && ms[i].Status != message.StatusDeleted {
			out = append(out, ms[i])
		}
	}
	return out, nil
}

// readers lets each user read the topics listed for it.
type readers map[int64][]string

func (r readers) ForRead(_ context.Context, _ string, user int64, a conversation.Address) (social.Conversation, error) {
	if !slices.Contains(r[user], a.Topic) {
		return social.Conversation{}, apperr.New(apperr.Forbidden, "not a member")
	}
	return social.Conversation{Topic: a.Topic}, nil
}

// receiver is the endpoint behind a ports.WebhookSender: it checks every signature and
// answers each attempt of an event with the next status of its script (200 when none left).
// The wire itself (net/http, the Go client's verifier) is adapters/httpclient's test.
type receiver struct {
	t      *testing.T
	clock  *memory.Clock
	secret string

	// tick is how long each request takes on the clock; onPost runs before each answer.
	tick   time.Duration
	onPost func()

	mu       sync.Mutex
	script   map[string][]int
	attempts map[string]int
	took     []string // event ids answered 2xx, in order
}

func (r *receiver) Post(_ context.Context, url string, headers map[string]string, body []byte) (int, error) {
	if want := domain.Sign(r.secret, r.clock.Now(), body); headers[domain.SignatureHeader] != want || url != "https://hooks.example/in" {
		r.t.Errorf("request to %s signed %q, want %q", url, headers[domain.SignatureHeader], want)
		return http.StatusUnauthorized, nil
	}
	var e domain.Event
	if err := json.Unmarshal(body, &e); err != nil || e.ID != headers[domain.EventIDHeader] || !slices.Contains(domain.EventTypes, e.Type) || e.Tenant != tenant {
		r.t.Errorf("event %s (%v), header id %q", body, err, headers[domain.EventIDHeader])
	}
	r.clock.Advance(r.tick)
	if r.onPost != nil {
		r.onPost()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.attempts[e.ID]++
	status := http.StatusOK
	if s := r.script[e.ID]; len(s) > 0 {
		status, r.script[e.ID] = s[0], s[1:]
	}
	if status < 300 {
		r.took = append(r.took, e.ID)
	}
	return status, nil
}

func (r *receiver) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.took)
}

type fixture struct {
	loop    *webhooks.Loop
	clock   *memory.Clock
	back    *backlog
	recv    *receiver
	cursors *memory.WebhookCursors
	metrics *memory.Metrics
	locks   *memory.Locks
	ep      domain.Endpoint

	endpoints *memory.WebhookEndpoints
	readers   readers
	revs      *memory.WebhookRevisions
	events    *memory.WebhookEvents
	reads     *eventReads
	revReads  *revisionReads
	lastRev   int64 // the last revision id a test recorded
}

// afterLog notes the id each read of a recorded stream reads after: a read by id walks every
// record above it.
type afterLog struct {
	mu     sync.Mutex
	afters []int64
}

func (r *afterLog) note(after int64) {
	r.mu.Lock()
	r.afters = append(r.afters, after)
	r.mu.Unlock()
}

// took returns the ids read after since the last call, and forgets them.
func (r *afterLog) took() []int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.afters
	r.afters = nil
	return out
}

// eventReads is the fixture's record of events, noting each EventsAfter.
type eventReads struct {
	*memory.WebhookEvents
	afterLog
}

func (r *eventReads) EventsAfter(ctx context.Context, tenant string, after int64, from, until time.Time, limit int) ([]domain.Record, error) {
	r.note(after)
	return r.WebhookEvents.EventsAfter(ctx, tenant, after, from, until, limit)
}

// revisionReads is the fixture's record of revisions, noting each RevisionsAfter.
type revisionReads struct {
	*memory.WebhookRevisions
	afterLog
}

func (r *revisionReads) RevisionsAfter(ctx context.Context, tenant string, after int64, from, until time.Time, limit int) ([]domain.Revision, error) {
	r.note(after)
	return r.WebhookRevisions.RevisionsAfter(ctx, tenant, after, from, until, limit)
}

func newFixture(t *testing.T, script map[string][]int) *fixture {
	t.Helper()
	clock := memory.NewClock(t0)
	f := &fixture{clock: clock, back: &backlog{topics: map[string][]message.Message{}, broken: map[string]bool{}}, cursors: memory.NewWebhookCursors(),
		locks: memory.NewLocks(clock.Now), metrics: memory.NewMetrics(), readers: readers{},
		revs: memory.NewWebhookRevisions(), events: memory.NewWebhookEvents()}
	f.reads = &eventReads{WebhookEvents: f.events}
	f.revReads = &revisionReads{WebhookRevisions: f.revs}
	f.recv = &receiver{t: t, clock: clock, secret: "whsec_test", script: script, attempts: map[string]int{}}
	endpoints := memory.NewWebhookEndpoints()
	f.ep = domain.Endpoint{ID: 1, URL: "https://hooks.example/in", Events: []domain.EventType{domain.MessageCreated}, Enabled: true, Secret: "whsec_test", CreatedAt: t0}
	others := []domain.Endpoint{
		{ID: 2, URL: "https://hooks.example/off", Events: []domain.EventType{domain.MessageCreated}, Secret: "whsec_other", CreatedAt: t0},
	}
	for _, e := range append(others, f.ep) {
		if err := endpoints.CreateEndpoint(context.Background(), tenant, e); err != nil {
			t.Fatal(err)
		}
	}
	f.endpoints = endpoints
	f.loop = f.node()
	return f
}

// node is another node's loop over the same stores: its retry state is its own.
func (f *fixture) node() *webhooks.Loop {
	return webhooks.New(webhooks.Config{FirstRetry: time.Second, MaxBackoff: 4 * time.Second, MaxAttempts: 3, Batch: 2},
		webhooks.Deps{Endpoints: f.endpoints, Cursors: f.cursors, Changes: f.back, History: f.back, Revisions: f.revReads, Events: f.reads, Readers: f.readers, Sender: f.recv,
			Locks: f.locks, Metrics: f.metrics, Clock: f.clock, Log: slog.New(slog.DiscardHandler)})
}

// pass runs one pass a minute of clock later, past any backoff.
func (f *fixture) pass(t *testing.T) {
	t.Helper()
	f.passOf(t, f.loop)
}

func (f *fixture) passOf(t *testing.T, l *webhooks.Loop) {
	t.Helper()
	f.clock.Advance(time.Minute)
	if err := l.Pass(context.Background(), tenant); err != nil {
		t.Fatalf("Pass: %v", err)
	}
}

// wantTook compares the events taken per topic, in order: topics are independent, so their
// interleaving is not part of the contract.
func wantTook(t *testing.T, f *fixture, want ...string) {
	t.Helper()
	perTopic := func(ids []string) map[string][]string {
		out := map[string][]string{}
		for _, id := range ids {
			topic := strings.SplitN(id, ":", 2)[0]
			out[topic] = append(out[topic], id)
		}
		return out
	}
	if got := f.recv.got(); !reflect.DeepEqual(perTopic(got), perTopic(want)) {
		t.Fatalf("delivered %v, want per topic %v", got, want)
	}
}

func TestDeliversEachTopicInSeqOrderSigned(t *testing.T) {
	f := newFixture(t, nil)
	f.recv.tick = 4 * time.Minute                                    // each request signed as it leaves, not when the pass began
	f.back.add("grp_1", 1, t0.Add(-time.Hour), message.StatusNormal) // before the endpoint existed
	f.back.add("grp_1", 2, t0.Add(time.Second), message.StatusDeleted)
	for seq := int64(3); seq <= 5; seq++ { // more than a page (Batch 2)
		f.back.add("grp_1", seq, t0.Add(time.Duration(seq)*time.Second), message.StatusNormal)
	}
	f.back.add("grp_2", 1, t0.Add(time.Second), message.StatusNormal)
	f.back.add("grp_2", 3, t0.Add(2*time.Second), message.StatusNormal) // seq 2 not committed yet
	for range 3 {                                                       // a page of two messages per topic and pass
		f.pass(t)
	}
	wantTook(t, f, "grp_1:3:message.created", "grp_1:4:message.created", "grp_2:1:message.created", "grp_1:5:message.created")

	f.back.add("grp_2", 2, t0.Add(3*time.Second), message.StatusNormal) // the late commit
	f.pass(t)
	wantTook(t, f, "grp_1:3:message.created", "grp_1:4:message.created", "grp_2:1:message.created", "grp_1:5:message.created",
		"grp_2:2:message.created", "grp_2:3:message.created")
	f.pass(t) // nothing new: nothing sent again
	if n := len(f.recv.got()); n != 6 {
		t.Fatalf("a quiet pass sent again: %v", f.recv.got())
	}
	if seq, ok, _ := f.cursors.TopicCursor(context.Background(), tenant, 1, "grp_2"); !ok || seq != 3 {
		t.Fatalf("cursor of grp_2 = %d, %v; want 3", seq, ok)
	}
	if _, ok, _ := f.cursors.ScanMark(context.Background(), tenant, 2); ok {
		t.Fatal("the disabled endpoint was scanned")
	}
}

func TestRetriesAfter500sKeepingTheTopicsOrder(t *testing.T) {
	f := newFixture(t, map[string][]int{"grp_1:1:message.created": {500, 503}})
	f.back.add("grp_1", 1, t0.Add(time.Second), message.StatusNormal)
	f.back.add("grp_1", 2, t0.Add(2*time.Second), message.StatusNormal)
	f.back.add("grp_2", 1, t0.Add(3*time.Second), message.StatusNormal)
	f.pass(t)
	wantTook(t, f, "grp_2:1:message.created") // another topic is not held up

	// Within the backoff nothing is sent again.
	if err := f.loop.Pass(context.Background(), tenant); err != nil {
		t.Fatal(err)
	}
	if n := f.recv.attempts["grp_1:1:message.created"]; n != 1 {
		t.Fatalf("%d attempts within the backoff, want 1", n)
	}
	f.pass(t)
	f.pass(t)
	wantTook(t, f, "grp_2:1:message.created", "grp_1:1:message.created", "grp_1:2:message.created")
	if n := f.recv.attempts["grp_1:2:message.created"]; n != 1 {
		t.Fatalf("seq 2 tried %d times, want once after seq 1 was taken", n)
	}
}

func TestDeadLetterAfterTheLastAttempt(t *testing.T) {
	f := newFixture(t, map[string][]int{"grp_1:1:message.created": {500, 500, 500, 500}})
	f.back.add("grp_1", 1, t0.Add(time.Second), message.StatusNormal)
	f.back.add("grp_1", 2, t0.Add(2*time.Second), message.StatusNormal)
	for range 3 {
		f.pass(t)
	}
	wantTook(t, f, "grp_1:2:message.created")
	for status, want := range map[string]float64{"ok": 1, "retry": 2, "dead": 1} {
		if n := f.metrics.Count("webhook_deliveries_total", status); n != want {
			t.Errorf("webhook_deliveries_total{%s} = %v, want %v", status, n, want)
		}
	}
	dead, err := f.cursors.DeadLetters(context.Background(), tenant, 1, 10)
	if err != nil || len(dead) != 1 || dead[0].Seq != 1 || dead[0].Attempts != 3 || dead[0].LastError != "status 500" || dead[0].Type != domain.MessageCreated {
		t.Fatalf("dead letters = %+v, %v", dead, err)
	}
}

func TestAnotherNodesLeaseDeliversNothing(t *testing.T) {
	f := newFixture(t, nil)
	f.back.add("grp_1", 1, t0.Add(time.Second), message.StatusNormal)
	f.clock.Advance(time.Minute)
	if _, ok, err := f.locks.Acquire(context.Background(), tenant, "webhooks", time.Hour); err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	if err := f.loop.Pass(context.Background(), tenant); err != nil {
		t.Fatal(err)
	}
	wantTook(t, f)
}

func TestReplayDeliversAgainFromItsPoint(t *testing.T) {
	f := newFixture(t, nil)
	for seq := int64(1); seq <= 3; seq++ {
		f.back.add("grp_1", seq, t0.Add(time.Duration(seq)*time.Minute), message.StatusNormal)
	}
	for range 2 {
		f.pass(t)
	}
	wantTook(t, f, "grp_1:1:message.created", "grp_1:2:message.created", "grp_1:3:message.created")
	if err := f.cursors.Replay(context.Background(), tenant, 1, t0.Add(2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		f.pass(t)
	}
	wantTook(t, f, "grp_1:1:message.created", "grp_1:2:message.created", "grp_1:3:message.created",
		"grp_1:2:message.created", "grp_1:3:message.created")
}

// A pass longer than the lease renews it, so no other node takes the tenant mid-pass.
func TestALongPassKeepsItsLease(t *testing.T) {
	f := newFixture(t, nil)
	f.recv.tick = 2 * time.Minute // the lease is 5 minutes; the pass takes 12
	for i := range 6 {
		f.back.add(fmt.Sprintf("grp_%d", i), 1, t0.Add(time.Second), message.StatusNormal)
	}
	posts := 0
	f.recv.onPost = func() {
		if posts++; posts == 5 {
			if _, ok, err := f.locks.Acquire(context.Background(), tenant, domain.LeaseName, time.Minute); err != nil || ok {
				t.Errorf("another node took the lease mid-pass: %v, %v", ok, err)
			}
		}
	}
	f.pass(t)
	if n := len(f.recv.got()); n != 6 {
		t.Fatalf("delivered %v, want all 6 in one pass", f.recv.got())
	}
}

// The retry count is of one seq: when another node delivered it meanwhile, the next seq's
// failures start a count of their own instead of dying early.
func TestRetriesCountPerSeqAcrossNodes(t *testing.T) {
	f := newFixture(t, map[string][]int{"grp_1:1:message.created": {500, 500}, "grp_1:2:message.created": {500, 500}})
	f.back.add("grp_1", 1, t0.Add(time.Second), message.StatusNormal)
	f.back.add("grp_1", 2, t0.Add(2*time.Second), message.StatusNormal)
	f.pass(t)
	f.pass(t) // this node: seq 1 failed twice of 3
	f.passOf(t, f.node())
	wantTook(t, f, "grp_1:1:message.created") // the other node: seq 1 taken, seq 2 failed once
	f.pass(t)                                 // this node: seq 2's first failure here, not its third
	if dead, _ := f.cursors.DeadLetters(context.Background(), tenant, 1, 10); len(dead) != 0 {
		t.Fatalf("dead letters %+v: the count of seq 1 was charged to seq 2", dead)
	}
	f.pass(t)
	wantTook(t, f, "grp_1:1:message.created", "grp_1:2:message.created")
}

// A topic that cannot be read is left for the next pass; the others are delivered, and the
// scan mark stays so the failed topic is found again.
func TestATopicThatFailsHoldsNoOther(t *testing.T) {
	f := newFixture(t, nil)
	f.back.add("grp_1", 1, t0.Add(time.Second), message.StatusNormal)
	f.back.add("grp_2", 1, t0.Add(time.Second), message.StatusNormal)
	f.back.broken["grp_1"] = true
	for range 3 {
		f.pass(t) // passes long after the settle window
	}
	wantTook(t, f, "grp_2:1:message.created")
	f.back.broken["grp_1"] = false
	f.pass(t)
	wantTook(t, f, "grp_2:1:message.created", "grp_1:1:message.created")
}

// A topic new to the endpoint starts at its first message from the endpoint's creation, found
// in one pass however long its history, not read from seq 1 a page per pass.
func TestALongTopicNewToTheEndpointStartsAtItsPoint(t *testing.T) {
	f := newFixture(t, nil)
	for seq := int64(1); seq <= 60; seq++ {
		f.back.add("grp_1", seq, t0.Add(-time.Hour+time.Duration(seq)*time.Second), message.StatusNormal)
	}
	f.back.add("grp_1", 61, t0.Add(time.Second), message.StatusNormal)
	f.pass(t)
	wantTook(t, f, "grp_1:61:message.created")
}

// An endpoint bound to a bot receives the events of the conversations the bot may read only,
// and those of one it joins later from then on.
func TestABotsEndpointSeesItsConversationsOnly(t *testing.T) {
	f := newFixture(t, nil)
	bound := f.ep
	bound.BotID = 90
	if err := f.endpoints.UpdateEndpoint(context.Background(), tenant, bound); err != nil {
		t.Fatal(err)
	}
	f.readers[90] = []string{"grp_1"}
	f.back.add("grp_1", 1, t0.Add(time.Second), message.StatusNormal)
	f.back.add("grp_2", 1, t0.Add(time.Second), message.StatusNormal)
	f.pass(t)
	wantTook(t, f, "grp_1:1:message.created")
	f.readers[90] = append(f.readers[90], "grp_2")
	f.back.add("grp_2", 2, f.clock.Now(), message.StatusNormal)
	f.pass(t)
	wantTook(t, f, "grp_1:1:message.created", "grp_2:1:message.created", "grp_2:2:message.created")
}

// Edits and recalls go out in the order they were recorded, each edit of a message an event of
// its own, only the types subscribed to, and a failed one holds the ones after it.
func TestEditsAndRecallsInTheirOrder(t *testing.T) {
	f := newFixture(t, map[string][]int{"grp_1:1:message.edited:2": {500}})
	ep := f.ep
	ep.Events = []domain.EventType{domain.MessageEdited, domain.MessageRecalled}
	if err := f.endpoints.UpdateEndpoint(context.Background(), tenant, ep); err != nil {
		t.Fatal(err)
	}
	f.back.add("grp_1", 1, t0.Add(time.Second), message.StatusNormal)                                                                                   // not subscribed: not sent
	f.revs.Record(tenant, domain.Revision{ID: 1, Topic: "grp_1", Seq: 1, Version: 2, Content: json.RawMessage(`{"text":"a"}`), At: t0.Add(-time.Hour)}) // before the endpoint
	f.revs.Record(tenant, domain.Revision{ID: 2, Topic: "grp_1", Seq: 1, Version: 2, Content: json.RawMessage(`{"text":"b"}`), At: t0.Add(2 * time.Second)})
	f.revs.Record(tenant, domain.Revision{ID: 3, Topic: "grp_1", Seq: 1, Version: 3, Content: json.RawMessage(`{"text":"c"}`), At: t0.Add(3 * time.Second)})
	f.revs.Record(tenant, domain.Revision{ID: 4, Topic: "grp_2", Seq: 7, Version: 2, Recall: true, At: t0.Add(4 * time.Second)})
	f.pass(t)
	wantTook(t, f) // the first edit failed; the rest waits behind it
	f.pass(t)
	f.pass(t) // a page (Batch 2) per pass
	if got, want := f.recv.got(), []string{"grp_1:1:message.edited:2", "grp_1:1:message.edited:3", "grp_2:7:message.recalled:2"}; !slices.Equal(got, want) {
		t.Fatalf("delivered %v, want %v in record order", got, want)
	}
	f.pass(t)
	if n := len(f.recv.got()); n != 3 {
		t.Fatalf("a quiet pass sent again: %v", f.recv.got())
	}
}

// subscribe makes the fixture's endpoint receive types, bound to bot (0: none).
func (f *fixture) subscribe(t *testing.T, bot int64, types ...domain.EventType) {
	t.Helper()
	ep := f.ep
	ep.Events, ep.BotID = types, bot
	if err := f.endpoints.UpdateEndpoint(context.Background(), tenant, ep); err != nil {
		t.Fatal(err)
	}
}

// recordEvents records a member join before the endpoint, then a join, a leave, a friendship
// and a report after it, and returns their event ids from the join on.
func (f *fixture) recordEvents() []string {
	recs := []domain.Record{
		domain.MemberRecord(true, 1, []int64{5}, 0, t0.Add(-time.Hour)), // before the endpoint
		domain.MemberRecord(true, 1, []int64{6, 7}, 0, t0.Add(time.Second)),
		domain.MemberRecord(false, 2, []int64{6}, 0, t0.Add(2*time.Second)),
		domain.FriendshipRecord(90, 5, true, 0, t0.Add(3*time.Second)),
		domain.ReportRecord(social.Report{ID: 77, Reporter: 6, Topic: "grp_1", Seq: 3, Reason: "spam", CreatedAt: t0.Add(4 * time.Second)}),
		domain.FriendshipRecord(5, 6, false, 0, t0.Add(5*time.Second)),
	}
	var ids []string
	for i, r := range recs {
		r.ID = f.events.Record(tenant, r)
		if i > 0 {
			ids = append(ids, domain.RecordEventID(r))
		}
	}
	return ids
}

// Member, friendship and report events go out in the order they were recorded, from the
// endpoint's creation, signed, a failed one holding the ones after it, and again from the
// point of a replay.
func TestMemberFriendshipAndReportEventsInTheirOrder(t *testing.T) {
	f := newFixture(t, map[string][]int{"events:2:member.joined": {500}})
	f.subscribe(t, 0, domain.MemberJoined, domain.MemberLeft, domain.FriendshipChanged, domain.ReportFiled)
	want := f.recordEvents()
	f.pass(t)
	wantTook(t, f) // the first join failed; the rest waits behind it
	for range 3 {
		f.pass(t) // a page (Batch 2) per pass
	}
	if got := f.recv.got(); !slices.Equal(got, want) {
		t.Fatalf("delivered %v, want %v in record order", got, want)
	}
	if err := f.cursors.Replay(context.Background(), tenant, f.ep.ID, t0.Add(3*time.Second)); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		f.pass(t)
	}
	if got, again := f.recv.got(), append(slices.Clone(want), want[2:]...); !slices.Equal(got, again) {
		t.Fatalf("after a replay from the friendship delivered %v, want %v", got, again)
	}
}

// The recorded streams, the member events and the edits, are read from the first record made
// since the endpoint's creation, or since the point of its replay, never by id from before the
// records made earlier: an endpoint has no cursor over them then, and its passes would walk
// every record kept (docs/DESIGN.md issue-32 part 2 "Edits and recalls", "Member, friendship
// and report events").
func TestRecordedEventsAreReadFromTheEndpointsPoint(t *testing.T) {
	type rec struct {
		id    int64
		event string
	}
	streams := []struct {
		name   string
		types  []domain.EventType
		record func(f *fixture, at time.Time) rec
		reads  func(f *fixture) *afterLog
	}{
		{"member events", []domain.EventType{domain.MemberJoined}, func(f *fixture, at time.Time) rec {
			r := domain.MemberRecord(true, 1, []int64{5}, 0, at)
			r.ID = f.events.Record(tenant, r)
			return rec{r.ID, domain.RecordEventID(r)}
		}, func(f *fixture) *afterLog { return &f.reads.afterLog }},
		{"edits", []domain.EventType{domain.MessageEdited}, func(f *fixture, at time.Time) rec {
			f.lastRev++ // the ids im_message_revisions gives
			r := domain.Revision{ID: f.lastRev, Topic: "grp_1", Seq: f.lastRev, Version: 2, Content: json.RawMessage(`{"text":"a"}`), At: at}
			f.revs.Record(tenant, r)
			return rec{r.ID, domain.RevisionEventID(r)}
		}, func(f *fixture) *afterLog { return &f.revReads.afterLog }},
	}
	for _, st := range streams {
		for _, tc := range []struct {
			name   string
			replay bool // from the record made an hour before the endpoint
		}{
			{"a new endpoint", false},
			{"a replay", true},
		} {
			t.Run(st.name+"/"+tc.name, func(t *testing.T) {
				f := newFixture(t, nil)
				f.subscribe(t, 0, st.types...)
				for i := range 200 {
					st.record(f, t0.Add(-2*time.Hour+time.Duration(i)*time.Second))
				}
				point, made := st.record(f, t0.Add(-time.Hour)), st.record(f, t0.Add(time.Second))
				wantFrom := func(what string, r rec) {
					t.Helper()
					if got := st.reads(f).took(); len(got) == 0 || got[0] != r.id-1 {
						t.Fatalf("%s read after ids %v, want first after %d (from record %d on)", what, got, r.id-1, r.id)
					}
				}
				f.pass(t)
				wantFrom("the first pass", made)
				want := []string{made.event}
				if tc.replay {
					if err := f.cursors.Replay(context.Background(), tenant, f.ep.ID, t0.Add(-time.Hour)); err != nil {
						t.Fatal(err)
					}
					f.pass(t)
					wantFrom("the pass after the replay", point)
					want = append(want, point.event, made.event)
				}
				if got := f.recv.got(); !slices.Equal(got, want) {
					t.Fatalf("delivered %v, want %v", got, want)
				}
			})
		}
	}
}

// An endpoint bound to a bot gets the member events of the groups the bot may read and its
// own friendships, never a report; an unsubscribed type is passed over.
func TestABotsEndpointSeesItsOwnEventsOnly(t *testing.T) {
	f := newFixture(t, nil)
	f.subscribe(t, 90, domain.MemberJoined, domain.FriendshipChanged, domain.ReportFiled)
	f.readers[90] = []string{"grp_1", "grp_2"}
	all := f.recordEvents()
	for range 4 {
		f.pass(t)
	}
	// The join of grp_1 and the bot's friendship; not the leave (unsubscribed), the report or
	// a friendship of others.
	if got, want := f.recv.got(), []string{all[0], all[2]}; !slices.Equal(got, want) {
		t.Fatalf("delivered %v, want %v", got, want)
	}
}

// Recorded events older than KeepEvents (90 days by default) are pruned by the pass, with or
// without an endpoint subscribed to them, except those an enabled endpoint subscribed to them
// has yet to pass: they wait for it, and a disabled endpoint holds none (docs/DESIGN.md
// issue-32 part 2 "Member, friendship and report events").
func TestRecordedEventsOlderThanKeptArePruned(t *testing.T) {
	day := 24 * time.Hour
	type ids struct{ old, older, kept int64 }
	for _, tc := range []struct {
		name string
		// endpoint sets the endpoint up once the events are recorded; nil leaves it on
		// message.created only.
		endpoint func(t *testing.T, f *fixture, r ids)
		want     func(r ids) []int64
	}{
		{"no endpoint takes them", nil, func(r ids) []int64 { return []int64{r.kept} }},
		{"an endpoint behind, refused", func(t *testing.T, f *fixture, r ids) {
			f.since(t, -100*day, domain.MemberJoined)
			f.setCursor(t, r.older)
			f.recv.script = map[string][]int{fmt.Sprintf("events:%d:member.joined", r.old): {500}}
		}, func(r ids) []int64 { return []int64{r.old, r.kept} }},
		{"an endpoint that passed them all", func(t *testing.T, f *fixture, r ids) {
			f.since(t, -100*day, domain.MemberJoined)
			f.setCursor(t, r.kept)
		}, func(r ids) []int64 { return []int64{r.kept} }},
		{"a disabled endpoint behind", func(t *testing.T, f *fixture, r ids) {
			f.since(t, -100*day, domain.MemberJoined)
			ep, err := f.endpoints.Endpoint(context.Background(), tenant, f.ep.ID)
			if err != nil {
				t.Fatal(err)
			}
			ep.Enabled = false
			if err := f.endpoints.UpdateEndpoint(context.Background(), tenant, ep); err != nil {
				t.Fatal(err)
			}
		}, func(r ids) []int64 { return []int64{r.kept} }},
		{"an endpoint made after them, behind on its own", func(t *testing.T, f *fixture, r ids) {
			f.since(t, -90*day-time.Hour, domain.MemberJoined)
			f.recv.script = map[string][]int{fmt.Sprintf("events:%d:member.joined", r.kept): {500}}
		}, func(r ids) []int64 { return []int64{r.kept} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, nil)
			r := ids{
				older: f.events.Record(tenant, domain.MemberRecord(true, 1, []int64{4}, 0, t0.Add(-95*day))),
				old:   f.events.Record(tenant, domain.MemberRecord(true, 1, []int64{5}, 0, t0.Add(-91*day))),
				kept:  f.events.Record(tenant, domain.MemberRecord(true, 1, []int64{6}, 0, t0.Add(-89*day))),
			}
			if tc.endpoint != nil {
				tc.endpoint(t, f, r)
			}
			f.pass(t)
			left, err := f.events.EventsAfter(context.Background(), tenant, 0, time.Time{}, f.clock.Now(), 10)
			var got []int64
			for _, e := range left {
				got = append(got, e.ID)
			}
			if want := tc.want(r); err != nil || !slices.Equal(got, want) {
				t.Fatalf("records left %v, %v; want %v (%+v)", got, err, want, r)
			}
		})
	}
}

// since remakes the fixture's endpoint as made at t0 + at, subscribed to types.
func (f *fixture) since(t *testing.T, at time.Duration, types ...domain.EventType) {
	t.Helper()
	ep := f.ep
	ep.Events, ep.CreatedAt = types, t0.Add(at)
	if err := f.endpoints.DeleteEndpoint(context.Background(), tenant, ep.ID); err != nil {
		t.Fatal(err)
	}
	if err := f.endpoints.CreateEndpoint(context.Background(), tenant, ep); err != nil {
		t.Fatal(err)
	}
}

// setCursor sets the endpoint's cursor over the recorded events to id.
func (f *fixture) setCursor(t *testing.T, id int64) {
	t.Helper()
	if err := f.cursors.SetTopicCursor(context.Background(), tenant, f.ep.ID, domain.EventStream, id); err != nil {
		t.Fatal(err)
	}
}

// The age of the oldest undelivered event grows while a retry waits, is 0 once it is taken,
// and a node that no longer holds the tenant reports 0, not its last age.
func TestTheBacklogAgeGauge(t *testing.T) {
	f := newFixture(t, map[string][]int{"grp_1:1:message.created": {500, 500}})
	f.back.add("grp_1", 1, t0.Add(time.Second), message.StatusNormal)
	age := func() float64 { return f.metrics.Count("webhook_oldest_undelivered_seconds", tenant, "1") }
	f.pass(t)
	if got := age(); got != 59 { // the event was made a second after t0, the pass ran at t0 + 1m
		t.Fatalf("age after a failure = %v, want 59", got)
	}
	f.pass(t)
	if got := age(); got != 119 {
		t.Fatalf("age after a second failure = %v, want 119", got)
	}
	f.pass(t)
	if got := age(); got != 0 {
		t.Fatalf("age once taken = %v, want 0", got)
	}
	f.metrics.Set("webhook_oldest_undelivered_seconds", 42, tenant, "1")
	f.clock.Advance(time.Minute)
	if _, ok, err := f.locks.Acquire(context.Background(), tenant, domain.LeaseName, time.Hour); err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	if err := f.loop.Pass(context.Background(), tenant); err != nil {
		t.Fatal(err)
	}
	if got := age(); got != 0 {
		t.Fatalf("age reported by a node without the lease = %v, want 0", got)
	}
}
