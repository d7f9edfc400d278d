package deliver

import (
	"context"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/imdhq/imd/core/domain/delivery"
	"github.com/imdhq/imd/core/domain/dialog"
	"github.com/imdhq/imd/core/kit/periodic"
	"github.com/imdhq/imd/ports"
)

// AckWaitConfig tunes the wait for a live push's acknowledgement (DESIGN issue-32 "Native
// push", "Connected but silent").
type AckWaitConfig struct {
	// Wait is how long a user's devices have to acknowledge or read a live MESSAGE push
	// before the user gets the native alert; 0 switches the rule off.
	Wait time.Duration
	// Cap bounds the token holders waiting on this node; past it a wait is dropped (counted),
	// and that user gets no alert for that message. Default 100,000.
	Cap int
}

// Watermarks tell how far users' devices got a conversation: the delivered watermark that
// PUSH_ACK raises, or the read one where that is further (ports.ReadReceipts), several users
// in one read.
type Watermarks interface {
	DeliveredToUsers(ctx context.Context, tenant string, conversationID int64, users []int64) (map[int64]int64, error)
}

// TokenHolders says, in memory, whether a user holds a native push token
// (core/usecase/nativepush.Holders).
type TokenHolders interface {
	Has(tenant string, user int64) bool
}

// AckWaitDeps are what the wait uses.
type AckWaitDeps struct {
	// Holders are the users a wait is started for: only they can get an alert, so a user
	// without a push token costs the wait nothing (DESIGN issue-32 "Native push").
	Holders    TokenHolders
	Watermarks Watermarks
	// Marks (the deliver queue's done marks) say which users were already told of a message:
	// by another node's fallback, for a device that refused the frame there, or by another
	// node's wait. Shared, so a user is alerted once whichever node pushed.
	Marks    doneMarker
	Notifier ports.PushNotifier
	Clock    ports.Clock
	Metrics  ports.Metrics
	Log      *slog.Logger
}

// Results of push_ack_wait_total.
const (
	ackWaitAlerted = "alerted" // nobody acked or read in time: handed to the notifier
	ackWaitAcked   = "acked"   // a device acked or the user read in time: no alert
	ackWaitDropped = "dropped" // the node's waits were at Cap: no alert
	ackWaitFailed  = "failed"  // the watermark or the notifier failed: no alert
	ackWaitTold    = "told"    // already told by a fallback or a wait elsewhere: no second alert
)

// ackKey is one user's wait for one message.
type ackKey struct {
	tenant, topic string
	user, seq     int64
}

type ackEntry struct {
	key     ackKey
	due     time.Time
	preview dialog.Preview
}

// AckWait holds, per node, the users a live MESSAGE push reached and who have not yet been
// checked: once Wait has passed, those whose watermark did not reach the message get the
// native alert an offline user gets (issue 32: "sent only when no device of the user took the
// live push"). Waits live in memory only: a restart forgets them (no alert, never a second
// one). The once-per-job fallback and the key set keep it to one wait per user and message on
// a node, and the told marks (Deps.Marks) to one alert across nodes (DESIGN issue-32).
type AckWait struct {
	cfg AckWaitConfig
	d   AckWaitDeps

	mu    sync.Mutex
	queue []ackEntry // queue[head:] wait, in due order: every wait lasts the same Wait
	head  int
	keys  map[ackKey]struct{}
}

// NewAckWait returns the wait; nil when cfg.Wait is 0 (the rule is off).
func NewAckWait(cfg AckWaitConfig, d AckWaitDeps) *AckWait {
	if cfg.Wait <= 0 {
		return nil
	}
	if cfg.Cap <= 0 {
		cfg.Cap = 100_000
	}
	return &AckWait{cfg: cfg, d: d, keys: make(map[ackKey]struct{})}
}

// Expect starts the wait of those of users, whom p's message was pushed to live, who hold a
// push token. A nil wait does nothing.
func (a *AckWait) Expect(tenant string, users []int64, p dialog.Preview) {
	if a == nil || len(users) == 0 {
		return
	}
	due := a.d.Clock.Now().Add(a.cfg.Wait)
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, u := range users {
		if !a.d.Holders.Has(tenant, u) {
			continue
		}
		k := ackKey{tenant: tenant, topic: p.Topic, user: u, seq: p.Seq}
		if _, ok := a.keys[k]; ok {
			continue
		}
		if len(a.keys) >= a.cfg.Cap {
			a.d.Metrics.Inc("push_ack_wait_total", ackWaitDropped)
			continue
		}
		a.keys[k] = struct{}{}
		a.queue = append(a.queue, ackEntry{key: k, due: due, preview: p})
	}
}

// take removes and returns the waits that ended by now.
func (a *AckWait) take(now time.Time) []ackEntry {
	a.mu.Lock()
	defer a.mu.Unlock()
	end := a.head
	for end < len(a.queue) && !a.queue[end].due.After(now) {
		end++
	}
	out := make([]ackEntry, end-a.head)
	copy(out, a.queue[a.head:end])
	for i := a.head; i < end; i++ {
		delete(a.keys, a.queue[i].key)
		a.queue[i] = ackEntry{}
	}
	a.head = end
	if a.head > len(a.queue)/2 {
		a.queue = append(a.queue[:0], a.queue[a.head:]...)
		a.head = 0
	}
	return out
}

// Check ends the waits due by now: the users of each message are read in one go; those whose
// watermark reached it are done, the others go to the notifier in one notification, as the
// offline ones did.
func (a *AckWait) Check(ctx context.Context, now time.Time) {
	type msgKey struct {
		tenant string
		msgID  int64
	}
	var order []msgKey
	waits := map[msgKey]*delivery.Notification{}
	for _, e := range a.take(now) {
		k := msgKey{e.key.tenant, e.preview.MsgID}
		n, ok := waits[k]
		if !ok {
			n = &delivery.Notification{Preview: e.preview}
			waits[k] = n
			order = append(order, k)
		}
		n.Users = append(n.Users, e.key.user)
	}
	for _, k := range order {
		n := waits[k]
		for users := range slices.Chunk(n.Users, maxAckWaitRead) {
			a.alert(ctx, k.tenant, delivery.Notification{Users: users, Preview: n.Preview})
		}
	}
}

// maxAckWaitRead bounds the users of one watermark read (and so of one notification).
const maxAckWaitRead = 1000

// alert reads the watermarks of n's users and notifies those it does not show at n's message.
func (a *AckWait) alert(ctx context.Context, tenant string, n delivery.Notification) {
	p := n.Preview
	marks, err := a.d.Watermarks.DeliveredToUsers(ctx, tenant, p.ConversationID, n.Users)
	if err != nil {
		// No alert: with the store down every connected user would get one.
		a.count(ackWaitFailed, len(n.Users))
		a.d.Log.DebugContext(ctx, "ack wait: watermarks not read", "tenant", tenant, "msg_id", p.MsgID, "users", len(n.Users), "err", err)
		return
	}
	waited := len(n.Users)
	silent := slices.DeleteFunc(n.Users, func(u int64) bool { return marks[u] >= p.Seq })
	a.count(ackWaitAcked, waited-len(silent))
	if len(silent) == 0 {
		return
	}
	first, err := a.d.Marks.MarkDone(ctx, tenant, a.markTTL(), toldKeys(p.MsgID, silent)...)
	if err != nil {
		// Alerted anyway, as the fallback acts when its mark fails: a second alert only for a
		// user another node already told, never for every user.
		a.d.Log.DebugContext(ctx, "ack wait: told marks not set; alerting anyway", "tenant", tenant, "msg_id", p.MsgID, "err", err)
		first = nil
	}
	untold := silent[:0]
	for i, u := range silent {
		if first == nil || first[i] {
			untold = append(untold, u)
		}
	}
	a.count(ackWaitTold, len(silent)-len(untold))
	if len(untold) == 0 {
		return
	}
	silent = untold
	n.Users = silent
	if err := a.d.Notifier.Notify(ctx, tenant, n); err != nil {
		a.count(ackWaitFailed, len(silent))
		a.d.Log.DebugContext(ctx, "ack wait: notification failed", "tenant", tenant, "msg_id", p.MsgID, "users", len(silent), "err", err)
		return
	}
	a.count(ackWaitAlerted, len(silent))
}

func (a *AckWait) count(result string, n int) {
	a.d.Metrics.Add("push_ack_wait_total", float64(n), result)
}

// Told marks users as told of message msgID by a fallback's notification, so that no node's
// wait alerts them again for it. A nil wait does nothing; a mark that cannot be set is logged.
func (a *AckWait) Told(ctx context.Context, tenant string, msgID int64, users []int64) {
	if a == nil || len(users) == 0 {
		return
	}
	if _, err := a.d.Marks.MarkDone(ctx, tenant, a.markTTL(), toldKeys(msgID, users)...); err != nil {
		a.d.Log.DebugContext(ctx, "ack wait: told marks not set", "tenant", tenant, "msg_id", msgID, "err", err)
	}
}

// markTTL keeps a told mark past the end of every wait it may meet.
func (a *AckWait) markTTL() time.Duration { return 2*a.cfg.Wait + time.Minute }

// toldKeys are the done keys saying each of users was told of msgID.
func toldKeys(msgID int64, users []int64) []string {
	keys := make([]string, len(users))
	for i, u := range users {
		keys[i] = "told" + strconv.FormatInt(u, 10) + ":" + strconv.FormatInt(msgID, 10)
	}
	return keys
}

// Run checks the waits until ctx ends, a tenth of Wait apart (10ms to 1s), so an alert comes
// at most that late. A nil wait returns at once.
func (a *AckWait) Run(ctx context.Context) {
	if a == nil {
		return
	}
	periodic.Every(ctx, min(max(a.cfg.Wait/10, 10*time.Millisecond), time.Second), func(ctx context.Context) {
		a.Check(ctx, a.d.Clock.Now())
	})
}
