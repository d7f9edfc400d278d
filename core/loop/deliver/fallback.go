package deliver

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"time"

	"github.com/imdhq/imd/core/domain/delivery"
	"github.com/imdhq/imd/core/domain/dialog"
	"github.com/imdhq/imd/core/domain/mailbox"
	"github.com/imdhq/imd/core/usecase/inbox"
	"github.com/imdhq/imd/ports"
)

// Fallback acts for the recipients a MESSAGE push did not reach: a MISSED_MESSAGE row per
// connected device that refused it, a system push to the users it did not reach. The deliver
// worker runs it for its own pass, once per job by the job's done mark; the node that receives
// a cross-node hand-off (core/loop/cluster.Receiver) runs it for the devices that refused there,
// once per job and receiving node (ActOnce), so a failure behaves the same wherever the
// recipient's connection is.
type Fallback struct {
	doneTTL  time.Duration
	done     doneMarker
	mailer   *inbox.Mailer
	notifier ports.PushNotifier
	ackWait  *AckWait
	metrics  ports.Metrics
	log      *slog.Logger
}

type doneMarker interface {
	MarkDone(ctx context.Context, tenant string, ttl time.Duration, keys ...string) (first []bool, err error)
}

// NewFallback returns the fallback of workers built with cfg and d.
func NewFallback(cfg Config, d Deps) *Fallback {
	return &Fallback{doneTTL: cfg.withDefaults().DoneTTL, done: d.Queue, mailer: d.Mailer, notifier: d.Notifier, ackWait: d.AckWait, metrics: d.Metrics, log: d.Log}
}

// durableTimeout bounds the fallback's writes once they no longer follow their caller's
// cancellation.
const durableTimeout = 5 * time.Second

// Act writes the rows and sends the system push for u; the caller made sure it acts once.
// The push already failed and the job is marked done, so nobody acts for u again: the rows
// are durable work this node started, written even when a shutdown cancels ctx meanwhile
// (issue 33: a row lost to `context canceled` 38 ms after SIGTERM), within durableTimeout.
func (f *Fallback) Act(ctx context.Context, tenant string, u delivery.Unreached) {
	if u.Message == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), durableTimeout)
	defer cancel()
	f.recordMissed(ctx, tenant, u)
	f.notify(ctx, tenant, u)
}

// ActOnce acts unless key (a job's done key and where it failed) already acted; a mark that
// cannot be set acts anyway, as a row or push twice is better than none.
func (f *Fallback) ActOnce(ctx context.Context, tenant, key string, u delivery.Unreached) {
	// The mark too outlives a shutdown's cancellation: a mark that fails acts anyway.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), durableTimeout)
	defer cancel()
	first, err := f.done.MarkDone(ctx, tenant, f.doneTTL, key)
	switch {
	case err != nil:
		f.log.WarnContext(ctx, "fallback once-mark failed; acting anyway", "tenant", tenant, "key", key, "err", err)
	case !first[0]:
		f.metrics.Inc("deliver_idempotent_skip_total")
		return
	}
	f.Act(ctx, tenant, u)
}

// recordMissed writes a MISSED_MESSAGE row for each connected device the push did not reach
// (DESIGN §1: offline users get none, their list marks the conversation). The rows only save
// those devices a full list sync, so a failure is logged, not retried: the job already pushed.
func (f *Fallback) recordMissed(ctx context.Context, tenant string, u delivery.Unreached) {
	if u.NotMailbox || len(u.Failed) == 0 {
		return
	}
	m := u.Message
	payload, err := json.Marshal(mailbox.Missed{Topic: m.Topic, ConversationID: m.ConversationID, MsgID: m.MsgID, Seq: m.Seq})
	if err != nil {
		f.log.ErrorContext(ctx, "missed-message payload", "msg_id", m.MsgID, "err", err)
		return
	}
	events := make([]mailbox.Event, len(u.Failed))
	for i, d := range u.Failed {
		events[i] = mailbox.Event{User: d.User, Device: d.Device, Type: mailbox.MissedMessage, ConversationID: m.ConversationID, Payload: payload}
	}
	if _, err := f.mailer.Post(ctx, tenant, events); err != nil {
		f.metrics.Inc("deliver_mailbox_total", "failed")
		f.log.ErrorContext(ctx, "missed-message rows not written", "tenant", tenant, "msg_id", m.MsgID, "devices", len(u.Failed), "err", err)
		return
	}
	f.metrics.Add("deliver_mailbox_total", float64(len(events)), "ok")
}

// notify hands the message to the system push service for recipients it did not reach: offline
// users and users with a failed device. The users it reached wait for their devices' PUSH_ACK
// (AckWait) and get the same notification if none comes in time (issue 32: "sent only when no
// device of the user took the live push"). Topic events (a recall, an edit) are no news worth
// a notification.
func (f *Fallback) notify(ctx context.Context, tenant string, u delivery.Unreached) {
	if u.NotPush || !dialog.CountsAsUnread(*u.Message) {
		return
	}
	users := slices.Clone(u.Offline)
	for _, d := range u.Failed {
		users = append(users, d.User)
	}
	users = alertable(u, users)
	preview := dialog.PreviewOf(*u.Message)
	if f.ackWait != nil && len(u.Recipients) > 0 {
		f.ackWait.Expect(tenant, alertable(u, reached(u)), preview)
	}
	if f.ackWait != nil && len(u.Failed) > 0 {
		// The node that pushed may be waiting for these users too, having handed their frame
		// to this node's channel: it must not alert them a second time.
		failed := make([]int64, len(u.Failed))
		for i, d := range u.Failed {
			failed[i] = d.User
		}
		f.ackWait.Told(ctx, tenant, u.Message.MsgID, alertable(u, failed))
	}
	if len(users) == 0 {
		return
	}
	if err := f.notifier.Notify(ctx, tenant, delivery.Notification{Users: users, Preview: preview}); err != nil {
		// Counted, and logged at debug only: a push service that is down would otherwise
		// log once per message.
		f.metrics.Inc("deliver_notify_total", "failed")
		f.log.DebugContext(ctx, "system push failed", "tenant", tenant, "msg_id", u.Message.MsgID, "users", len(users), "err", err)
		return
	}
	f.metrics.Inc("deliver_notify_total", "ok")
}

// reached are u's recipients the push reached on every connected device: neither offline nor
// with a device that refused it. A set, as a group's lists may be long.
func reached(u delivery.Unreached) []int64 {
	missed := make(map[int64]bool, len(u.Offline)+len(u.Failed))
	for _, user := range u.Offline {
		missed[user] = true
	}
	for _, d := range u.Failed {
		missed[d.User] = true
	}
	out := make([]int64, 0, len(u.Recipients))
	for _, user := range u.Recipients {
		if !missed[user] {
			out = append(out, user)
		}
	}
	return out
}

// alertable keeps of users, sorted and once each, those a notification of u's message may go
// to: never the sender, nor users who muted the conversation unless the message mentions them
// (issue 32: a mention gets through a mute).
func alertable(u delivery.Unreached, users []int64) []int64 {
	m := u.Message
	users = slices.DeleteFunc(users, func(user int64) bool {
		return user == u.From || (u.Muted[user] && !m.MentionAll && !slices.Contains(m.Mentions, user))
	})
	slices.Sort(users)
	return slices.Compact(users)
}
