package mysql

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/shard"
)

// spyDB is a DBTX that records the statements it would send, and the last arguments.
type spyDB struct {
	queries []string
	args    []any
}

func (s *spyDB) ExecContext(_ context.Context, q string, args ...any) (sql.Result, error) {
	s.queries = append(s.queries, q)
	s.args = args
	return nil, nil
}

func (s *spyDB) PrepareContext(_ context.Context, q string) (*sql.Stmt, error) {
	s.queries = append(s.queries, q)
	return nil, nil
}

func (s *spyDB) QueryContext(_ context.Context, q string, _ ...any) (*sql.Rows, error) {
	s.queries = append(s.queries, q)
	return nil, nil
}

func (s *spyDB) QueryRowContext(_ context.Context, q string, _ ...any) *sql.Row {
	s.queries = append(s.queries, q)
	return nil
}

func TestMonthTableBinding(t *testing.T) {
	cases := []struct {
		name      string
		catalog   []string
		month     month.Month
		wantErr   error
		wantLoads int
		wantQuery string
	}{
		{"registered month", []string{"203001"}, 203001, nil, 1,
			"SELECT * FROM im_group_messages_203001 WHERE topic = ?"},
		{"unregistered month", []string{"203001"}, 203002, shard.ErrMonthMissing, 2, ""},
		{"invalid month number", []string{"203001"}, 203013, month.ErrInvalid, 1, ""},
		{"month outside the table whitelist", nil, 1234567, month.ErrInvalid, 1, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			loads := 0
			cat := newMonthCatalog(func(context.Context) ([]string, error) {
				loads++
				return c.catalog, nil
			})
			ctx := context.Background()
			if err := cat.refresh(ctx); err != nil {
				t.Fatal(err)
			}
			spy := &spyDB{}
			db, err := cat.on(ctx, spy, c.month)
			if !errors.Is(err, c.wantErr) {
				t.Fatalf("err = %v, want %v", err, c.wantErr)
			}
			if loads != c.wantLoads {
				t.Fatalf("catalog loaded %d times, want %d", loads, c.wantLoads)
			}
			if err != nil {
				if len(spy.queries) != 0 {
					t.Fatalf("queries reached the database: %q", spy.queries)
				}
				return
			}
			db.QueryContext(ctx, "SELECT * FROM im_group_messages_tpl WHERE topic = ?", "grp_1")
			if len(spy.queries) != 1 || spy.queries[0] != c.wantQuery {
				t.Fatalf("sent %q, want %q", spy.queries, c.wantQuery)
			}
		})
	}
}

func TestMonthCatalogLearnsNewMonthsOnMiss(t *testing.T) {
	registered := []string{"203001"}
	cat := newMonthCatalog(func(context.Context) ([]string, error) { return registered, nil })
	ctx := context.Background()
	if _, err := cat.table(ctx, 203002); !errors.Is(err, shard.ErrMonthMissing) {
		t.Fatalf("before registration: err = %v, want shard.ErrMonthMissing", err)
	}
	registered = append(registered, "203002") // another node ran EnsureTable
	name, err := cat.table(ctx, 203002)
	if err != nil || name != "im_group_messages_203002" {
		t.Fatalf("after registration: %q, %v", name, err)
	}
}
