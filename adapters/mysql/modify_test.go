package mysql

import (
	"database/sql"
	"encoding/json"
	"testing"

	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/webhook"
	"github.com/imdhq/imd/ports"
	"github.com/imdhq/imd/ports/contract"
)

func TestMessageEditorContract(t *testing.T) {
	contract.MessageEditor(t, func(t *testing.T) contract.EditorFixture {
		c, tenant := newTestCluster(t)
		s := NewMessageStore(c, MessageStoreOptions{})
		t.Cleanup(func() { s.Close() })
		db := rawDB(t, c, tenant)
		return contract.EditorFixture{
			Editor: NewMessageEditor(c), Store: s, Shards: NewShardStore(c), Tenant: tenant,
			Revisions: func(t *testing.T, topicName string, seq int64) []contract.RevisionRow {
				return readRevisions(t, db, topicName, seq)
			},
		}
	})
}

func TestWebhookRevisionsContract(t *testing.T) {
	contract.WebhookRevisions(t, func(t *testing.T) (ports.WebhookRevisions, func(*testing.T, webhook.Revision) int64, string) {
		c, tenant := newTestCluster(t)
		db := rawDB(t, c, tenant)
		return NewWebhookRevisions(c), func(t *testing.T, r webhook.Revision) int64 {
			t.Helper()
			return insertRevision(t, db, r)
		}, tenant
	})
}

// insertRevision writes r as the message editor's transaction writes its row, the month
// that of its time.
func insertRevision(t *testing.T, db *sql.DB, r webhook.Revision) int64 {
	t.Helper()
	action, content := message.ActionEdit, sql.NullString{String: string(r.Content), Valid: r.Content != nil}
	if r.Recall {
		action = message.ActionRecall
	}
	res, err := db.Exec(`INSERT INTO im_message_revisions (topic, shard_month, seqid, message_id, version, editor, action, new_content, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, r.Topic, r.At.UTC().Format("200601"), r.Seq, r.MsgID, r.Version, r.Editor, string(action), content, r.At.UTC())
	if err != nil {
		t.Fatalf("insert revision: %v", err)
	}
	id, err := res.LastInsertId()
	if err != nil {
		t.Fatalf("revision id: %v", err)
	}
	return id
}

// readRevisions reads im_message_revisions directly: no port reads it yet.
func readRevisions(t *testing.T, db *sql.DB, topicName string, seq int64) []contract.RevisionRow {
	t.Helper()
	rows, err := db.Query(`SELECT shard_month, message_id, version, editor, action, old_content, new_content
		FROM im_message_revisions WHERE topic = ? AND seqid = ? ORDER BY id`, topicName, seq)
	if err != nil {
		t.Fatalf("read revisions: %v", err)
	}
	defer rows.Close()
	var out []contract.RevisionRow
	for rows.Next() {
		var (
			r                      contract.RevisionRow
			m                      string
			action                 string
			oldContent, newContent sql.NullString
		)
		if err := rows.Scan(&m, &r.MsgID, &r.Version, &r.Editor, &action, &oldContent, &newContent); err != nil {
			t.Fatalf("scan revision: %v", err)
		}
		if r.Month, err = month.Parse(m); err != nil {
			t.Fatalf("revision month: %v", err)
		}
		r.Action = message.Action(action)
		if oldContent.Valid {
			r.Old = json.RawMessage(oldContent.String)
		}
		if newContent.Valid {
			r.New = json.RawMessage(newContent.String)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("read revisions: %v", err)
	}
	return out
}

func TestDeleteLogContract(t *testing.T) {
	contract.DeleteLog(t, func(t *testing.T) (ports.DeleteLog, ports.MessageStore, ports.ShardStore, string) {
		c, tenant := newTestCluster(t)
		s := NewMessageStore(c, MessageStoreOptions{})
		t.Cleanup(func() { s.Close() })
		return NewDeleteLog(c), s, NewShardStore(c), tenant
	})
}

func TestGroupOwnersContract(t *testing.T) {
	contract.GroupOwners(t, func(t *testing.T) (ports.GroupOwners, ports.Directory, string) {
		c, tenant := newTestCluster(t)
		d := NewDirectory(c)
		return d, d, tenant
	})
}
