package deliver

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/imdhq/imd/core/domain/mailbox"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/usecase/inbox"
	"github.com/imdhq/imd/ports"
)

// missedBatch bounds the rows one mailbox append writes.
const missedBatch = 500

// drainTimeout bounds how long Run keeps writing what is queued once it is told to stop.
const drainTimeout = 5 * time.Second

// Missed turns MESSAGE pushes that reached a connection but were never acknowledged (PUSH_ACK
// timed out, or the connection closed first) into MISSED_MESSAGE rows for that device (seed
// 003 §8, §12.2). The transport reports them from its event loops and timeout sweep, which
// must never wait on MySQL: Record only queues, and drops (counted) when the queue is full;
// Run writes the queue in batches. A dropped row costs the device nothing it cannot recover:
// its conversation list still shows the message.
type Missed struct {
	mailer  *inbox.Mailer
	metrics ports.Metrics
	log     *slog.Logger
	queue   chan missedPush
}

type missedPush struct {
	tenant string
	user   int64
	device uint64
	msg    message.Message
}

// missedCapacity bounds the unacknowledged pushes waiting to become mailbox rows.
const missedCapacity = 10_000

// NewMissed returns a recorder holding up to missedCapacity pushes.
func NewMissed(mailer *inbox.Mailer, metrics ports.Metrics, log *slog.Logger) *Missed {
	return newMissed(mailer, metrics, log, missedCapacity)
}

func newMissed(mailer *inbox.Mailer, metrics ports.Metrics, log *slog.Logger, capacity int) *Missed {
	return &Missed{mailer: mailer, metrics: metrics, log: log, queue: make(chan missedPush, max(capacity, 1))}
}

// Record queues a push the device did not acknowledge; it never blocks.
func (m *Missed) Record(tenant string, user int64, device uint64, msg message.Message) {
	select {
	case m.queue <- missedPush{tenant: tenant, user: user, device: device, msg: msg}:
	default:
		m.metrics.Inc("deliver_mailbox_total", "dropped")
	}
}

// Run writes queued pushes until ctx ends, then what is still queued, for at most drainTimeout.
func (m *Missed) Run(ctx context.Context) {
	for {
		select {
		case p := <-m.queue:
			m.write(context.WithoutCancel(ctx), p)
		case <-ctx.Done():
			drain, cancel := context.WithTimeout(context.WithoutCancel(ctx), drainTimeout)
			defer cancel()
			for drain.Err() == nil {
				select {
				case p := <-m.queue:
					m.write(drain, p)
				default:
					return
				}
			}
			return
		}
	}
}

// write posts p and whatever else is queued, up to missedBatch, one append per tenant.
func (m *Missed) write(ctx context.Context, first missedPush) {
	byTenant := map[string][]mailbox.Event{}
	add := func(p missedPush) {
		payload, err := json.Marshal(mailbox.Missed{Topic: p.msg.Topic, ConversationID: p.msg.ConversationID, MsgID: p.msg.MsgID, Seq: p.msg.Seq})
		if err != nil {
			m.log.ErrorContext(ctx, "missed-message payload", "msg_id", p.msg.MsgID, "err", err)
			return
		}
		byTenant[p.tenant] = append(byTenant[p.tenant], mailbox.Event{
			User: p.user, Device: p.device, Type: mailbox.MissedMessage, ConversationID: p.msg.ConversationID, Payload: payload,
		})
	}
	add(first)
collect:
	for range missedBatch - 1 {
		select {
		case p := <-m.queue:
			add(p)
		default:
			break collect
		}
	}
	for tenant, events := range byTenant {
		if _, err := m.mailer.Post(ctx, tenant, events); err != nil {
			m.metrics.Inc("deliver_mailbox_total", "failed")
			m.log.ErrorContext(ctx, "unacknowledged pushes not recorded", "tenant", tenant, "rows", len(events), "err", err)
			continue
		}
		m.metrics.Add("deliver_mailbox_total", float64(len(events)), "ok")
	}
}
