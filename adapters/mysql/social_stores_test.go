package mysql

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"

	"github.com/imdhq/imd/ports"
	"github.com/imdhq/imd/ports/contract"
)

func TestReportsContract(t *testing.T) {
	contract.Reports(t, func(t *testing.T) (ports.Reports, string) {
		c, tenant := newTestCluster(t)
		return NewReports(c), tenant
	})
}

func TestWebhookEndpointsContract(t *testing.T) {
	contract.WebhookEndpoints(t, func(t *testing.T) (ports.WebhookEndpoints, string) {
		c, tenant := newTestCluster(t)
		return NewWebhookEndpoints(c), tenant
	})
}

func TestWebhookCursorsContract(t *testing.T) {
	contract.WebhookCursors(t, func(t *testing.T) (ports.WebhookCursors, string) {
		c, tenant := newTestCluster(t)
		return NewWebhookCursors(c), tenant
	})
}

func TestSummariesContract(t *testing.T) {
	contract.Summaries(t, func(t *testing.T) (ports.Summaries, ports.MessageStore, ports.ShardStore, ports.Directory, string) {
		c, tenant := newTestCluster(t)
		s := NewMessageStore(c, MessageStoreOptions{})
		t.Cleanup(func() { s.Close() })
		return NewSummaries(c), s, NewShardStore(c), NewDirectory(c), tenant
	})
}

func TestDailySummariesContract(t *testing.T) {
	contract.DailySummaries(t, func(t *testing.T) (ports.Summaries, ports.DailyCounter, string) {
		c, tenant := newTestCluster(t)
		s := NewSummaries(c)
		return s, s, tenant
	})
}

func TestTenantStoreContract(t *testing.T) {
	contract.TenantStore(t, func(t *testing.T) ports.TenantStore {
		dsn := testDSN(t)
		c, err := Open(dsn, 0)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		database := "imdtest_registry_" + randomSuffix(t)
		r := NewTenantRegistry(c, database)
		if err := r.Open(context.Background()); err != nil {
			t.Fatalf("Open: %v", err)
		}
		t.Cleanup(func() {
			r.Close()
			c.Close()
			dropDatabase(t, dsn, database)
		})
		return r
	})
}

func randomSuffix(tb testing.TB) string {
	var raw [6]byte
	if _, err := rand.Read(raw[:]); err != nil {
		tb.Fatal(err)
	}
	return hex.EncodeToString(raw[:])
}

func TestRevocationsContract(t *testing.T) {
	contract.Revocations(t, func(t *testing.T) (ports.TokenRevocations, string) {
		c, tenant := newTestCluster(t)
		return NewRevocations(c), tenant
	})
}

func TestPresenceContract(t *testing.T) {
	contract.Presence(t, func(t *testing.T) (contract.PresenceStore, string) {
		c, tenant := newTestCluster(t)
		return NewPresence(c), tenant
	})
}

func TestPushTokensContract(t *testing.T) {
	contract.PushTokens(t, func(t *testing.T) (ports.PushTokens, string) {
		c, tenant := newTestCluster(t)
		return NewPushTokens(c), tenant
	})
}

func TestBotsContract(t *testing.T) {
	contract.Bots(t, func(t *testing.T) (ports.Bots, string) {
		c, tenant := newTestCluster(t)
		return NewBots(c), tenant
	})
}

func TestWebhookEventsContract(t *testing.T) {
	contract.WebhookEvents(t, func(t *testing.T) (contract.SocialGraph, ports.Reports, ports.WebhookEvents, string) {
		c, tenant := newTestCluster(t)
		return NewDirectory(c), NewReports(c), NewWebhookEvents(c), tenant
	})
}
