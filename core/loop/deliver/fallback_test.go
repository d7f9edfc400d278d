package deliver

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/memory"
	"github.com/imdhq/imd/core/domain/delivery"
	"github.com/imdhq/imd/core/domain/mailbox"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/usecase/inbox"
	"github.com/imdhq/imd/ports"
)

// cancelAware is a mailbox that, like MySQL, refuses a write whose context has ended.
type cancelAware struct{ ports.Mailbox }

func (m cancelAware) Append(ctx context.Context, tenant string, events []mailbox.Event) ([]mailbox.Event, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return m.Mailbox.Append(ctx, tenant, events)
}

// A shutdown that cancels the caller's context between the failed push and the fallback does
// not cost the device its MISSED_MESSAGE row (issue 33): both ways in, Act and ActOnce.
func TestFallbackWritesRowsAfterItsCallerWasCancelled(t *testing.T) {
	for _, once := range []bool{false, true} {
		name := map[bool]string{false: "Act", true: "ActOnce"}[once]
		t.Run(name, func(t *testing.T) {
			clock := memory.NewClock(time.Date(2026, 5, 14, 10, 0, 0, 0, time.UTC))
			box, metrics := memory.NewMailbox(), memory.NewMetrics()
			log := slog.New(slog.NewTextHandler(io.Discard, nil))
			mailer := inbox.NewMailer(inbox.MailerDeps{Mailbox: cancelAware{box}, Pusher: &fakePusher{}, IDs: memory.NewIDs(clock), Clock: clock, Log: log})
			f := NewFallback(Config{}, Deps{Queue: memory.NewDeliverQueue(clock.Now), Mailer: mailer, Notifier: memory.NewNotifier(), Metrics: metrics, Log: log})

			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			u := delivery.Unreached{
				Message: &message.Message{Topic: "grp_1", ConversationID: 9, Seq: 4, MsgID: 104},
				From:    1, Failed: []delivery.Device{{User: 2, Device: 5}},
			}
			if once {
				f.ActOnce(ctx, tenant, "deliver:done:104@n1", u)
			} else {
				f.Act(ctx, tenant, u)
			}
			rows, err := box.Since(context.Background(), tenant, 2, 5, 0, 10)
			if err != nil || len(rows) != 1 || rows[0].Type != mailbox.MissedMessage {
				t.Fatalf("rows after a cancelled caller = %+v, %v; want one missed_message", rows, err)
			}
			if got := metrics.Count("deliver_mailbox_total", "failed"); got != 0 {
				t.Fatalf("failed rows = %v, want 0", got)
			}
		})
	}
}

// The system push skips the sender and users who muted the conversation, unless the message
// mentions them (issue 32).
func TestFallbackNotifiesMutedOnlyWhenMentioned(t *testing.T) {
	tests := []struct {
		name       string
		mentions   []int64
		mentionAll bool
		want       []int64
	}{
		{name: "muted skipped", want: []int64{3}},
		{name: "muted but mentioned", mentions: []int64{2}, want: []int64{2, 3}},
		{name: "mention all", mentionAll: true, want: []int64{2, 3}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clock := memory.NewClock(time.Date(2026, 5, 14, 10, 0, 0, 0, time.UTC))
			log := slog.New(slog.NewTextHandler(io.Discard, nil))
			notifier := memory.NewNotifier()
			mailer := inbox.NewMailer(inbox.MailerDeps{Mailbox: memory.NewMailbox(), Pusher: &fakePusher{}, IDs: memory.NewIDs(clock), Clock: clock, Log: log})
			f := NewFallback(Config{}, Deps{Queue: memory.NewDeliverQueue(clock.Now), Mailer: mailer, Notifier: notifier, Metrics: memory.NewMetrics(), Log: log})
			u := delivery.Unreached{
				Message: &message.Message{Topic: "grp_1", ConversationID: 9, Seq: 4, MsgID: 104, Type: "text", From: 1,
					Mentions: tc.mentions, MentionAll: tc.mentionAll},
				From: 1, Offline: []int64{1, 2, 3}, Muted: map[int64]bool{2: true},
			}
			f.Act(context.Background(), tenant, u)
			if got := notifier.Users(); len(got) != 1 || !slices.Equal(got[0], tc.want) {
				t.Fatalf("notified %v; want [%v]", got, tc.want)
			}
		})
	}
}
