package deliver

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/memory"
	"github.com/imdhq/imd/core/domain/mailbox"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/usecase/inbox"
)

func TestMissedPushesBecomeMailboxRows(t *testing.T) {
	clock := memory.NewClock(time.Date(2026, 5, 14, 10, 0, 0, 0, time.UTC))
	box, metrics := memory.NewMailbox(), memory.NewMetrics()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	mailer := inbox.NewMailer(inbox.MailerDeps{Mailbox: box, Pusher: &fakePusher{}, IDs: memory.NewIDs(clock), Clock: clock, Log: log})
	missed := newMissed(mailer, metrics, log, 3)

	msg := func(seq int64) message.Message {
		return message.Message{Topic: "grp_1", ConversationID: 9, Seq: seq, MsgID: 100 + seq}
	}
	missed.Record(tenant, 2, 5, msg(1))
	missed.Record(tenant, 2, 5, msg(2))
	missed.Record(tenant, 3, 7, msg(1))
	missed.Record(tenant, 3, 7, msg(3)) // over capacity: dropped, counted
	if got := metrics.Count("deliver_mailbox_total", "dropped"); got != 1 {
		t.Fatalf("dropped = %v, want 1", got)
	}

	// A stopped recorder still writes what was queued.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	missed.Run(ctx)

	rows, err := box.Since(context.Background(), tenant, 2, 5, 0, 10)
	if err != nil || len(rows) != 2 {
		t.Fatalf("user 2 rows = %+v, %v; want 2", rows, err)
	}
	if rows[1].Type != mailbox.MissedMessage || rows[1].Device != 5 || string(rows[1].Payload) != `{"topic":"grp_1","conversation_id":9,"msg_id":102,"seq":2}` {
		t.Fatalf("row = %+v (%s)", rows[1], rows[1].Payload)
	}
	if rows, _ := box.Since(context.Background(), tenant, 3, 7, 0, 10); len(rows) != 1 {
		t.Fatalf("user 3 rows = %+v, want 1", rows)
	}
	if got := metrics.Count("deliver_mailbox_total", "ok"); got != 3 {
		t.Fatalf("ok = %v, want 3", got)
	}
}
