package memory

import (
	"testing"

	"github.com/imdhq/imd/core/domain/webhook"

	"github.com/imdhq/imd/ports"
	"github.com/imdhq/imd/ports/contract"
)

func TestMessageEditorContract(t *testing.T) {
	contract.MessageEditor(t, func(*testing.T) contract.EditorFixture {
		shards := NewShardStore()
		editor := NewMessageEditor(shards)
		const tenant = "acme"
		return contract.EditorFixture{
			Editor: editor, Store: NewMessageStore(shards), Shards: shards, Tenant: tenant,
			Revisions: func(_ *testing.T, topicName string, seq int64) []contract.RevisionRow {
				var out []contract.RevisionRow
				for _, r := range editor.Revisions(tenant, topicName, seq) {
					out = append(out, contract.RevisionRow{
						Month: r.Month, MsgID: r.MsgID, Version: r.Message.Version, Editor: r.Editor,
						Action: r.Action, Old: r.OldContent, New: r.Message.Content,
					})
				}
				return out
			},
		}
	})
}

func TestWebhookRevisionsContract(t *testing.T) {
	contract.WebhookRevisions(t, func(*testing.T) (ports.WebhookRevisions, func(*testing.T, webhook.Revision) int64, string) {
		revs, last := NewWebhookRevisions(), int64(0)
		return revs, func(_ *testing.T, r webhook.Revision) int64 {
			last++
			r.ID = last
			revs.Record("acme", r)
			return r.ID
		}, "acme"
	})
}

func TestDeleteLogContract(t *testing.T) {
	contract.DeleteLog(t, func(*testing.T) (ports.DeleteLog, ports.MessageStore, ports.ShardStore, string) {
		shards := NewShardStore()
		return NewDeleteLog(shards), NewMessageStore(shards), shards, "acme"
	})
}

func TestGroupOwnersContract(t *testing.T) {
	contract.GroupOwners(t, func(*testing.T) (ports.GroupOwners, ports.Directory, string) {
		d := NewDirectory()
		return d, d, "acme"
	})
}
