package memory

import (
	"testing"

	"github.com/imdhq/imd/ports"
	"github.com/imdhq/imd/ports/contract"
)

func TestReportsContract(t *testing.T) {
	contract.Reports(t, func(*testing.T) (ports.Reports, string) { return NewReports(), "acme" })
}

func TestTenantStoreContract(t *testing.T) {
	contract.TenantStore(t, func(*testing.T) ports.TenantStore { return NewTenantStore() })
}

func TestRevocationsContract(t *testing.T) {
	contract.Revocations(t, func(*testing.T) (ports.TokenRevocations, string) { return NewRevocations(), "acme" })
}

func TestSummariesContract(t *testing.T) {
	contract.Summaries(t, func(*testing.T) (ports.Summaries, ports.MessageStore, ports.ShardStore, ports.Directory, string) {
		shards, dir := NewShardStore(), NewDirectory()
		return NewSummaries(shards, dir), NewMessageStore(shards), shards, dir, "acme"
	})
}

func TestDailySummariesContract(t *testing.T) {
	contract.DailySummaries(t, func(*testing.T) (ports.Summaries, ports.DailyCounter, string) {
		s := NewSummaries(NewShardStore(), NewDirectory())
		return s, s, "acme"
	})
}

func TestPresenceContract(t *testing.T) {
	contract.Presence(t, func(*testing.T) (contract.PresenceStore, string) { return NewPresence(), "acme" })
}

func TestWebhookEndpointsContract(t *testing.T) {
	contract.WebhookEndpoints(t, func(*testing.T) (ports.WebhookEndpoints, string) { return NewWebhookEndpoints(), "acme" })
}

func TestWebhookCursorsContract(t *testing.T) {
	contract.WebhookCursors(t, func(*testing.T) (ports.WebhookCursors, string) { return NewWebhookCursors(), "acme" })
}

func TestPushTokensContract(t *testing.T) {
	contract.PushTokens(t, func(*testing.T) (ports.PushTokens, string) { return NewPushTokens(), "acme" })
}

func TestBotsContract(t *testing.T) {
	contract.Bots(t, func(*testing.T) (ports.Bots, string) { return NewBots(), "acme" })
}

func TestWebhookEventsContract(t *testing.T) {
	contract.WebhookEvents(t, func(*testing.T) (contract.SocialGraph, ports.Reports, ports.WebhookEvents, string) {
		events := NewWebhookEvents()
		return NewDirectory().RecordEventsIn(events), NewReports().RecordEventsIn(events), events, "acme"
	})
}
