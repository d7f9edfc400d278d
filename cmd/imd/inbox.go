package main

import (
	"log/slog"

	"github.com/imdhq/imd/adapters/protocol/session"
	tcpserver "github.com/imdhq/imd/adapters/tcp/server"
	"github.com/imdhq/imd/core/deliver"
	"github.com/imdhq/imd/core/inbox"
	"github.com/imdhq/imd/ports"
)

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
