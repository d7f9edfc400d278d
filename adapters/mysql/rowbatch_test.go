package mysql

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/imdhq/imd/adapters/mysql/sqlcdb"
)

func TestExpandRows(t *testing.T) {
	cases := []struct {
		name  string
		query string
		n     int
		sep   string
		want  string
		fails bool
	}{
		{"values", "INSERT INTO t (a, b) VALUES /*ROW*/(?, ?)", 3, sepValues,
			"INSERT INTO t (a, b) VALUES (?, ?), (?, ?), (?, ?)", false},
		{"one row", "INSERT INTO t (a) VALUES /*ROW*/(?) ON DUPLICATE KEY UPDATE a = VALUES(a)", 1, sepValues,
			"INSERT INTO t (a) VALUES (?) ON DUPLICATE KEY UPDATE a = VALUES(a)", false},
		{"nested parentheses", "SELECT * FROM (/*ROW*/(SELECT CAST(? AS SIGNED) AS a)) AS k", 2, sepUnion,
			"SELECT * FROM ((SELECT CAST(? AS SIGNED) AS a) UNION ALL (SELECT CAST(? AS SIGNED) AS a)) AS k", false},
		{"no marker", "SELECT 1", 2, sepUnion, "", true},
		{"marker without group", "SELECT /*ROW*/ 1", 2, sepUnion, "", true},
		{"unbalanced", "SELECT /*ROW*/(1", 2, sepUnion, "", true},
		{"no rows", "VALUES /*ROW*/(?)", 0, sepValues, "", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := expandRows(c.query, c.n, c.sep)
			if (err != nil) != c.fails {
				t.Fatalf("err = %v, want failure %v", err, c.fails)
			}
			if got != c.want {
				t.Fatalf("got  %q\nwant %q", got, c.want)
			}
		})
	}
}

// The batch keeps the generated statement and argument order, row after row.
func TestRowBatchTakesStatementFromGeneratedCode(t *testing.T) {
	ctx := context.Background()
	b := rowBatch{sep: sepUnion}
	for i := range 2 {
		p := sqlcdb.LockDedupParams{Topic: fmt.Sprintf("grp_%d", i), FromUser: int64(i), ClientMsgID: fmt.Sprintf("c%d", i)}
		if err := b.add(func(q *sqlcdb.Queries) error { _, err := q.LockDedup(ctx, p); return err }); err != nil {
			t.Fatal(err)
		}
	}
	spy := &spyDB{}
	if err := b.exec(ctx, spy); err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(spy.args), "[grp_0 0 c0 grp_1 1 c1]"; got != want {
		t.Fatalf("args = %s, want %s", got, want)
	}
	const want = "AS client_msg_id) UNION ALL (SELECT"
	if len(spy.queries) != 1 || strings.Count(spy.queries[0], want) != 1 {
		t.Fatalf("statement = %q, want it to contain %q", spy.queries, want)
	}
}
