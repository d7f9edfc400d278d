package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/imdhq/imd/adapters/mysql/sqlcdb"
)

// rowMarker precedes the parenthesized group of a query that stands for one row of a batch.
const rowMarker = "/*ROW*/"

// Separators between repeated row groups.
const (
	sepValues = ", "          // INSERT … VALUES (…), (…)
	sepUnion  = " UNION ALL " // derived table (SELECT …) UNION ALL (SELECT …)
	sepOr     = " OR "        // WHERE (key = … AND …) OR (key = … AND …)
)

// errRecorded stops a generated :many method after its statement was recorded.
var errRecorded = errors.New("statement recorded, not sent")

// rowBatch turns a generated one-row statement into one statement for many rows, since sqlc has
// no multi-row statements for MySQL. The SQL text and the argument order come from the
// generated method itself (run against a recorder), so the batch cannot drift from the query
// file that sqlc checked against the schema.
type rowBatch struct {
	sep   string
	query string
	args  []any
	rows  int
}

// add records what call sends for one row, without sending it.
func (b *rowBatch) add(call func(*sqlcdb.Queries) error) error {
	return b.addWith(func(rec *recorder) error { return call(sqlcdb.New(rec)) })
}

// addWith is add for any generated package: call runs one of its methods against rec.
func (b *rowBatch) addWith(call func(rec *recorder) error) error {
	var rec recorder
	if err := call(&rec); err != nil && !errors.Is(err, errRecorded) {
		return err
	}
	if b.rows > 0 && rec.query != b.query {
		return errors.New("row batch mixes statements")
	}
	b.query = rec.query
	b.args = append(b.args, rec.args...)
	b.rows++
	return nil
}

// statement is the batch as one statement: the marked group repeated once per row.
func (b *rowBatch) statement() (string, error) {
	return expandRows(b.query, b.rows, b.sep)
}

// exec sends the batch through db.
func (b *rowBatch) exec(ctx context.Context, db sqlcdb.DBTX) error {
	stmt, err := b.statement()
	if err != nil {
		return err
	}
	_, err = db.ExecContext(ctx, stmt, b.args...)
	return err
}

// replay returns queries whose every statement is the batch: calling the same generated
// :many method again (with zero arguments) runs the batch and lets the generated code scan
// its rows.
func (b *rowBatch) replay(db sqlcdb.DBTX) (*sqlcdb.Queries, error) {
	stmt, err := b.statement()
	if err != nil {
		return nil, err
	}
	return sqlcdb.New(replayed{db: db, query: stmt, args: b.args}), nil
}

// expandRows repeats the group after rowMarker n times, joined by sep.
func expandRows(query string, n int, sep string) (string, error) {
	at := strings.Index(query, rowMarker)
	if at < 0 {
		return "", fmt.Errorf("query has no %s group", rowMarker)
	}
	if n < 1 {
		return "", errors.New("row batch is empty")
	}
	start := at + len(rowMarker)
	end, err := groupEnd(query, start)
	if err != nil {
		return "", err
	}
	group := query[start:end]
	var sb strings.Builder
	sb.Grow(len(query) + (n-1)*(len(group)+len(sep)))
	sb.WriteString(query[:at])
	for i := range n {
		if i > 0 {
			sb.WriteString(sep)
		}
		sb.WriteString(group)
	}
	sb.WriteString(query[end:])
	return sb.String(), nil
}

// groupEnd returns the index just past the parenthesized group starting at start. The marked
// groups hold placeholders, names and function calls only, never string literals.
func groupEnd(query string, start int) (int, error) {
	if start >= len(query) || query[start] != '(' {
		return 0, fmt.Errorf("%s must be followed by '('", rowMarker)
	}
	depth := 0
	for i := start; i < len(query); i++ {
		switch query[i] {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return i + 1, nil
			}
		}
	}
	return 0, fmt.Errorf("unbalanced %s group", rowMarker)
}

// recorder is a DBTX that keeps the last statement instead of sending it.
type recorder struct {
	query string
	args  []any
}

func (r *recorder) record(query string, args []any) {
	r.query = query
	r.args = args
}

func (r *recorder) ExecContext(_ context.Context, query string, args ...any) (sql.Result, error) {
	r.record(query, args)
	return nil, nil
}

func (r *recorder) QueryContext(_ context.Context, query string, args ...any) (*sql.Rows, error) {
	r.record(query, args)
	return nil, errRecorded
}

// QueryRowContext is not supported: a *sql.Row cannot carry an error without a database.
func (r *recorder) QueryRowContext(context.Context, string, ...any) *sql.Row {
	panic("rowBatch: :one queries cannot be batched")
}

func (r *recorder) PrepareContext(context.Context, string) (*sql.Stmt, error) {
	return nil, errors.New("rowBatch: prepared statements cannot be batched")
}

// replayed is a DBTX that sends one fixed statement whatever the generated code asks for.
type replayed struct {
	db    sqlcdb.DBTX
	query string
	args  []any
}

func (r replayed) ExecContext(ctx context.Context, _ string, _ ...any) (sql.Result, error) {
	return r.db.ExecContext(ctx, r.query, r.args...)
}

func (r replayed) QueryContext(ctx context.Context, _ string, _ ...any) (*sql.Rows, error) {
	return r.db.QueryContext(ctx, r.query, r.args...)
}

func (r replayed) QueryRowContext(ctx context.Context, _ string, _ ...any) *sql.Row {
	return r.db.QueryRowContext(ctx, r.query, r.args...)
}

func (r replayed) PrepareContext(ctx context.Context, _ string) (*sql.Stmt, error) {
	return r.db.PrepareContext(ctx, r.query)
}
