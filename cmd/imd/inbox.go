package main

import (
	"log/slog"
	"time"

	"go.uber.org/fx"

	"github.com/imdhq/imd/adapters/config"
	"github.com/imdhq/imd/adapters/protocol/session"
	tcpserver "github.com/imdhq/imd/adapters/tcp/server"
	"github.com/imdhq/imd/core/deliver"
	"github.com/imdhq/imd/core/inbox"
	"github.com/imdhq/imd/core/inflight"
	"github.com/imdhq/imd/core/membership"
	"github.com/imdhq/imd/ports"
)

type deliverParams struct {
	fx.In
	Cfg      config.Config
	Queue    ports.DeliverQueue
	Pusher   ports.DevicePusher
	Dialogs  ports.DialogStore
	Mailer   *inbox.Mailer
	Notifier ports.PushNotifier
	Members  *membership.Cache
	Metrics  ports.Metrics
	Clock    ports.Clock
	Log      *slog.Logger
	InFlight *inflight.Sends
	Pending  ports.PendingSeqs
	Owner    deliver.Owner
}

// sendBoundSkew covers the node clocks' difference when a consumer bounds a send that runs
// on another node by the request timeout (deliver.Config.SendBound).
const sendBoundSkew = 2 * time.Second

func newDeliver(p deliverParams) *deliver.Workers {
	d := p.Cfg.Deliver
	return deliver.New(deliver.Config{TakeTimeout: d.TakeTimeout, DoneTTL: d.DoneTTL, MaxAttempts: d.MaxAttempts, ReorderWait: d.ReorderWait,
		SendBound: p.Cfg.TCP.RequestTimeout + sendBoundSkew},
		deliver.Deps{
			Queue: p.Queue, Pusher: p.Pusher, Dialogs: p.Dialogs, Mailer: p.Mailer, Notifier: p.Notifier,
			Members: p.Members, Metrics: p.Metrics, Clock: p.Clock, Log: p.Log, InFlight: p.InFlight, Pending: p.Pending, Owner: p.Owner,
		})
}

// missedCapacity bounds the unacknowledged pushes waiting to become mailbox rows.
const missedCapacity = 10_000

func newMissed(m *inbox.Mailer, met ports.Metrics, log *slog.Logger) *deliver.Missed {
	return deliver.NewMissed(m, met, log, missedCapacity)
}

// recordUnacked turns MESSAGE pushes a device never acknowledged into MISSED_MESSAGE rows
// (the runtime's missed_pushes loop writes them).
func recordUnacked(tcp *tcpserver.Server, missed *deliver.Missed) {
	tcp.SetPushUnacked(func(u session.Unacked) {
		if u.Message != nil {
			missed.Record(u.Tenant, u.User, u.Device, *u.Message)
		}
	})
}
