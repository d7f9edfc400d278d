package mysql

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/mysql/sqlcdb"
)

// A batch UPDATE must find each of its rows by primary key even on a young
// table, whose statistics make a full scan look cheap: a scan locks every row and deadlocked
// the queued marks against the group commit's inserts (CI, TestShard15…, 2026-12-01).
func TestBatchUpdatesLockOnlyTheirRows(t *testing.T) {
	c, tenant := newTestCluster(t)
	db := rawDB(t, c, tenant)
	ctx := context.Background()
	cases := []struct {
		name   string
		sep    string
		table  string // the updated table, or its alias in the statement
		access string // how EXPLAIN must show it read, by PRIMARY
		rows   int
		call   func(q *sqlcdb.Queries, i int) error
	}{
		{"queued marks", sepOr, "im_group_message_dedup", "range", 3, func(q *sqlcdb.Queries, i int) error {
			return q.MarkDedupQueued(ctx, sqlcdb.MarkDedupQueuedParams{Topic: "grp_1", FromUser: int64(i + 1), ClientMsgID: "c"})
		}},
		{"a lone queued mark", sepOr, "im_group_message_dedup", "range", 1, func(q *sqlcdb.Queries, i int) error {
			return q.MarkDedupQueued(ctx, sqlcdb.MarkDedupQueuedParams{Topic: "grp_1", FromUser: int64(i + 1), ClientMsgID: "c"})
		}},
		{"conversation heads", sepUnion, "c", "eq_ref", 3, func(q *sqlcdb.Queries, i int) error {
			return q.AdvanceConversations(ctx, sqlcdb.AdvanceConversationsParams{ID: int64(i + 1), LastSeq: 1, LastMsgID: 1, LastMsgAt: time.Now()})
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := rowBatch{sep: tc.sep}
			for i := range tc.rows {
				if err := b.add(func(q *sqlcdb.Queries) error { return tc.call(q, i) }); err != nil {
					t.Fatal(err)
				}
			}
			spy := &spyDB{}
			if err := b.exec(ctx, spy); err != nil {
				t.Fatal(err)
			}
			access, key := planFor(t, db, spy.queries[len(spy.queries)-1], spy.args, tc.table)
			if access != tc.access || key != "PRIMARY" {
				t.Fatalf("%s is read by %s on key %q, want %s on PRIMARY", tc.table, access, key, tc.access)
			}
		})
	}
}

// planFor returns the access type and key EXPLAIN shows for table.
func planFor(t *testing.T, db *sql.DB, query string, args []any, table string) (access, key string) {
	t.Helper()
	rows, err := db.Query("EXPLAIN "+query, args...)
	if err != nil {
		t.Fatalf("explain: %v", err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		row := map[string]string{}
		for i, c := range cols {
			row[c] = vals[i].String
		}
		if row["table"] == table {
			return row["type"], row["key"]
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	t.Fatalf("no plan row for %s", table)
	return "", ""
}
