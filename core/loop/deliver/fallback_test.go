package deliver

import (
	"context"
	"io"
	"log/slog"
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
