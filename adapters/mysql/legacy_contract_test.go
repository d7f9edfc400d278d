package mysql

import (
	"context"
	"testing"

	"github.com/imdhq/imd/adapters/mysql/legacygen"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/ports/contract"
)

func TestLegacyContract(t *testing.T) {
	contract.Legacy(t, func(t *testing.T) contract.LegacyFixture {
		c, tenant := newTestCluster(t)
		s := NewMessageStore(c, MessageStoreOptions{})
		t.Cleanup(func() { s.Close() })
		db := rawDB(t, c, tenant)
		return contract.LegacyFixture{
			Tenant: tenant, Store: s, Shards: NewShardStore(c), DeleteLog: NewDeleteLog(c),
			Legacy: NewLegacy(c), Jobs: NewMigrations(c),
			Load: func(t *testing.T, rows []message.Message) {
				ctx := context.Background()
				if err := legacygen.CreateTable(ctx, db); err != nil {
					t.Fatal(err)
				}
				if err := legacygen.Insert(ctx, db, legacygen.FromMessages(rows)); err != nil {
					t.Fatal(err)
				}
			},
		}
	})
}
