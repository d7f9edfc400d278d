// Package month holds the UTC calendar-month arithmetic of the month-sharded message tables
// (seed 000 §2.1) and the whitelist that turns a month into a table name.
package month

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"time"
)

// Month is a UTC calendar month encoded as YYYYMM (e.g. 202611). The zero value is invalid.
type Month int32

// TablePrefix is the fixed name stem of the month tables (seed 000 §2.1).
const TablePrefix = "im_group_messages_"

// TemplateTable is the table the sqlc queries are written against; the MySQL adapter rewrites it.
const TemplateTable = "im_group_messages_tpl"

var (
	ErrInvalid      = errors.New("invalid month")
	ErrInvalidTable = errors.New("invalid month table name")
	tableRE         = regexp.MustCompile(`^im_group_messages_[0-9]{6}$`)
)

// Bounds of months the product accepts; anything outside is a malformed request, not data.
const (
	minYear = 2000
	maxYear = 2999
)

// Of returns the UTC month of t.
func Of(t time.Time) Month {
	t = t.UTC()
	return Month(t.Year()*100 + int(t.Month()))
}

// New returns the month for a year and month number, validated.
func New(year int, m time.Month) (Month, error) {
	v := Month(year*100 + int(m))
	if !v.Valid() {
		return 0, fmt.Errorf("%w: %d-%02d", ErrInvalid, year, int(m))
	}
	return v, nil
}

// Parse reads a YYYYMM string strictly: six digits, a real month, within product bounds.
func Parse(s string) (Month, error) {
	if len(s) != 6 {
		return 0, fmt.Errorf("%w: %q", ErrInvalid, s)
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("%w: %q", ErrInvalid, s)
		}
	}
	n, _ := strconv.Atoi(s)
	m := Month(n)
	if !m.Valid() {
		return 0, fmt.Errorf("%w: %q", ErrInvalid, s)
	}
	return m, nil
}

// Valid reports whether m is a real month within product bounds.
func (m Month) Valid() bool {
	y, mm := int(m)/100, int(m)%100
	return y >= minYear && y <= maxYear && mm >= 1 && mm <= 12
}

func (m Month) Year() int { return int(m) / 100 }

func (m Month) Mon() time.Month { return time.Month(int(m) % 100) }

func (m Month) String() string {
	// Every message names its month several times (rows, routes, metric labels): six digits
	// by hand, fmt only for what no valid month is.
	if m < 0 || m > 999999 {
		return fmt.Sprintf("%06d", int32(m))
	}
	var b [6]byte
	for i, v := 5, int32(m); i >= 0; i, v = i-1, v/10 {
		b[i] = byte('0' + v%10)
	}
	return string(b[:])
}

// Start is the first instant of the month, UTC.
func (m Month) Start() time.Time { return time.Date(m.Year(), m.Mon(), 1, 0, 0, 0, 0, time.UTC) }

// End is the first instant of the next month, UTC (exclusive bound).
func (m Month) End() time.Time { return m.Next().Start() }

// Add moves n months forward (negative: backward).
func (m Month) Add(n int) Month {
	idx := m.Year()*12 + int(m.Mon()) - 1 + n
	return Month((idx/12)*100 + idx%12 + 1)
}

func (m Month) Next() Month { return m.Add(1) }

func (m Month) Prev() Month { return m.Add(-1) }

// Table is the physical table name of m. It only ever derives from a valid Month, never from
// request text, so it is safe to splice into SQL after Valid.
func (m Month) Table() (string, error) {
	if !m.Valid() {
		return "", fmt.Errorf("%w: %d", ErrInvalid, int32(m))
	}
	return TablePrefix + m.String(), nil
}

// ParseTable checks a table name against the whitelist ^im_group_messages_[0-9]{6}$ and returns
// its month.
func ParseTable(name string) (Month, error) {
	if !tableRE.MatchString(name) {
		return 0, fmt.Errorf("%w: %q", ErrInvalidTable, name)
	}
	m, err := Parse(name[len(TablePrefix):])
	if err != nil {
		return 0, fmt.Errorf("%w: %q", ErrInvalidTable, name)
	}
	return m, nil
}
