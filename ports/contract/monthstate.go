package contract

import (
	"fmt"
	"testing"
	"time"

	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/ports"
)

// MonthFixture is a month state bound to one fresh tenant.
type MonthFixture struct {
	Tenant string
	Months ports.MonthState
}

// MonthState checks ports.MonthState: active_month moves only forward and only into ready
// months. fresh must return a new tenant on every call.
func MonthState(t *testing.T, fresh func(t *testing.T) MonthFixture) {
	t.Run("fresh tenant has no active month", func(t *testing.T) {
		t.Parallel()
		f := fresh(t)
		if m, found, err := f.Months.Active(t.Context(), f.Tenant); err != nil || found {
			t.Fatalf("Active = %v, %v, %v; want not found", m, found, err)
		}
	})

	t.Run("advance only into ready months and never backward", func(t *testing.T) {
		t.Parallel()
		f := fresh(t)
		g := f.Months.GroupOf("grp_1")
		jan, feb, mar, apr := month.Month(203101), month.Month(203102), month.Month(203103), month.Month(203104)
		steps := []struct {
			name    string
			ready   []month.Month
			advance month.Month
			want    month.Month // 0: still none active
		}{
			{name: "not ready, none active", advance: jan, want: 0},
			{name: "ready", ready: []month.Month{jan}, advance: jan, want: jan},
			{name: "not ready stays", advance: mar, want: jan},
			{name: "next ready", ready: []month.Month{feb}, advance: feb, want: feb},
			{name: "earlier ready month is not a way back", advance: jan, want: feb},
			{name: "same month", advance: feb, want: feb},
			{name: "skips ahead to a ready month", ready: []month.Month{apr}, advance: apr, want: apr},
		}
		for _, st := range steps {
			for _, m := range st.ready {
				if err := f.Months.MarkReady(t.Context(), f.Tenant, g, m); err != nil {
					t.Fatalf("%s: MarkReady(%s): %v", st.name, m, err)
				}
			}
			got, err := f.Months.Advance(t.Context(), f.Tenant, g, st.advance)
			if err != nil || got != st.want {
				t.Fatalf("%s: Advance(%s) = %v, %v; want %v", st.name, st.advance, got, err, st.want)
			}
			active, found, err := f.Months.Active(t.Context(), f.Tenant)
			if err != nil || found != (st.want != 0) || active != st.want {
				t.Fatalf("%s: Active = %v, %v, %v; want %v", st.name, active, found, err, st.want)
			}
		}
	})

	t.Run("a scheduled switch waits for its instant, forward and into ready months only", func(t *testing.T) {
		t.Parallel()
		f := fresh(t)
		g := f.Months.GroupOf("grp_1")
		jan, feb, mar, apr := month.Month(203101), month.Month(203102), month.Month(203103), month.Month(203104)
		for _, m := range []month.Month{jan, feb, mar} {
			if err := f.Months.MarkReady(t.Context(), f.Tenant, g, m); err != nil {
				t.Fatalf("MarkReady(%s): %v", m, err)
			}
		}
		if _, err := f.Months.Advance(t.Context(), f.Tenant, g, jan); err != nil {
			t.Fatalf("Advance(%s): %v", jan, err)
		}
		now, err := f.Months.Now(t.Context())
		if err != nil {
			t.Fatalf("Now: %v", err)
		}
		// soon must still be ahead when its step runs, after three steps' round trips on a busy
		// box (a Cluster's took longer than 50 ms under the suite's load).
		soon, later := now.Add(3*time.Second), now.Add(time.Hour)
		steps := []struct {
			name string
			to   month.Month
			at   time.Time
			// waitFor: the month state's clock reaches it before the step's Advance(jan).
			waitFor time.Time
			want    month.Month // after SwitchAt and after Advance(jan)
		}{
			{name: "scheduled for later", to: feb, at: later, want: jan},
			{name: "a later month replaces it", to: mar, at: later, want: jan},
			{name: "an instant passed switches at once", to: feb, at: now.Add(-time.Millisecond), want: feb},
			{name: "the same month keeps the earlier instant", to: mar, at: soon, want: feb},
			{name: "the schedule is made once due", to: mar, at: later, waitFor: soon, want: mar},
			{name: "never backward", to: jan, at: now, want: mar},
			{name: "only into a ready month", to: apr, at: now, want: mar},
		}
		for _, st := range steps {
			got, err := f.Months.SwitchAt(t.Context(), f.Tenant, g, st.to, st.at)
			if err != nil {
				t.Fatalf("%s: SwitchAt(%s): %v", st.name, st.to, err)
			}
			for !st.waitFor.IsZero() {
				n, err := f.Months.Now(t.Context())
				if err != nil {
					t.Fatalf("Now: %v", err)
				}
				if !n.Before(st.waitFor) {
					break
				}
				time.Sleep(st.waitFor.Sub(n))
			}
			if st.waitFor.IsZero() && got != st.want {
				t.Fatalf("%s: SwitchAt(%s) = %s; want %s", st.name, st.to, got, st.want)
			}
			if got, err := f.Months.Advance(t.Context(), f.Tenant, g, jan); err != nil || got != st.want {
				t.Fatalf("%s: then Advance(%s) = %s, %v; want %s", st.name, jan, got, err, st.want)
			}
		}
	})

	t.Run("each group keeps its own copy; Active is the newest", func(t *testing.T) {
		t.Parallel()
		f := fresh(t)
		a, b := twoGroups(t, f.Months)
		jan, feb := month.Month(203101), month.Month(203102)
		steps := []struct {
			name    string
			group   int
			ready   month.Month
			advance month.Month
			want    month.Month // the group's active month after the step
			newest  month.Month // Active after the step
		}{
			{name: "ready in one group only", group: a, ready: jan, advance: jan, want: jan, newest: jan},
			{name: "another group's ready set is its own", group: b, advance: jan, want: 0, newest: jan},
			{name: "the other group ahead", group: b, ready: feb, advance: feb, want: feb, newest: feb},
			{name: "a group behind stays behind", group: a, advance: feb, want: jan, newest: feb},
			{name: "and catches up once ready", group: a, ready: feb, advance: feb, want: feb, newest: feb},
		}
		for _, st := range steps {
			if st.ready != 0 {
				if err := f.Months.MarkReady(t.Context(), f.Tenant, st.group, st.ready); err != nil {
					t.Fatalf("%s: MarkReady: %v", st.name, err)
				}
			}
			if got, err := f.Months.Advance(t.Context(), f.Tenant, st.group, st.advance); err != nil || got != st.want {
				t.Fatalf("%s: Advance(group %d, %s) = %v, %v; want %v", st.name, st.group, st.advance, got, err, st.want)
			}
			if active, found, err := f.Months.Active(t.Context(), f.Tenant); err != nil || !found || active != st.newest {
				t.Fatalf("%s: Active = %v, %v, %v; want %v", st.name, active, found, err, st.newest)
			}
		}
		// A schedule is a group's own too.
		mar := month.Month(203103)
		for _, g := range []int{a, b} {
			if err := f.Months.MarkReady(t.Context(), f.Tenant, g, mar); err != nil {
				t.Fatalf("MarkReady: %v", err)
			}
		}
		now, err := f.Months.Now(t.Context())
		if err != nil {
			t.Fatalf("Now: %v", err)
		}
		if got, err := f.Months.SwitchAt(t.Context(), f.Tenant, a, mar, now.Add(-time.Millisecond)); err != nil || got != mar {
			t.Fatalf("SwitchAt(group %d, due) = %v, %v; want %v", a, got, err, mar)
		}
		if got, err := f.Months.Advance(t.Context(), f.Tenant, b, feb); err != nil || got != feb {
			t.Fatalf("Advance(group %d) after another group's switch = %v, %v; want %v", b, got, err, feb)
		}
	})

	t.Run("invalid month or group is rejected", func(t *testing.T) {
		t.Parallel()
		f := fresh(t)
		g := f.Months.GroupOf("grp_1")
		for _, bad := range []int{-1, f.Months.Groups()} {
			if err := f.Months.MarkReady(t.Context(), f.Tenant, bad, 203101); err == nil {
				t.Errorf("MarkReady(group %d) succeeded", bad)
			}
			if _, err := f.Months.Advance(t.Context(), f.Tenant, bad, 203101); err == nil {
				t.Errorf("Advance(group %d) succeeded", bad)
			}
			if _, err := f.Months.SwitchAt(t.Context(), f.Tenant, bad, 203101, time.Now()); err == nil {
				t.Errorf("SwitchAt(group %d) succeeded", bad)
			}
		}
		for _, m := range []month.Month{0, 203113, 199912} {
			if err := f.Months.MarkReady(t.Context(), f.Tenant, g, m); err == nil {
				t.Errorf("MarkReady(%d) succeeded", m)
			}
			if _, err := f.Months.Advance(t.Context(), f.Tenant, g, m); err == nil {
				t.Errorf("Advance(%d) succeeded", m)
			}
			if _, err := f.Months.SwitchAt(t.Context(), f.Tenant, g, m, time.Now()); err == nil {
				t.Errorf("SwitchAt(%d) succeeded", m)
			}
		}
	})

	t.Run("topics spread over the groups", func(t *testing.T) {
		t.Parallel()
		f := fresh(t)
		seen := map[int]bool{}
		for i := range 64 * f.Months.Groups() {
			g := f.Months.GroupOf(fmt.Sprintf("grp_%d", i))
			if g < 0 || g >= f.Months.Groups() {
				t.Fatalf("GroupOf(grp_%d) = %d; want in [0, %d)", i, g, f.Months.Groups())
			}
			seen[g] = true
		}
		if len(seen) != f.Months.Groups() {
			t.Errorf("%d topics landed in %d of %d groups", 64*f.Months.Groups(), len(seen), f.Months.Groups())
		}
	})

	t.Run("now is a UTC clock", func(t *testing.T) {
		t.Parallel()
		f := fresh(t)
		a, err := f.Months.Now(t.Context())
		if err != nil {
			t.Fatalf("Now: %v", err)
		}
		b, err := f.Months.Now(t.Context())
		if err != nil {
			t.Fatalf("Now: %v", err)
		}
		if a.IsZero() || a.Location() != time.UTC || b.Before(a) {
			t.Fatalf("Now = %v then %v; want a non-zero UTC time that does not go back", a, b)
		}
	})
}

// twoGroups returns two topics' distinct groups a and b, or skips when ms has one group.
func twoGroups(t *testing.T, ms ports.MonthState) (a, b int) {
	t.Helper()
	a, b, _, _ = twoTopics(t, ms)
	return a, b
}

// twoTopics returns two topics in distinct groups and their groups, or skips when ms has
// one group.
func twoTopics(t *testing.T, ms ports.MonthState) (a, b int, ta, tb string) {
	t.Helper()
	if ms.Groups() < 2 {
		t.Skip("one slot group")
	}
	ta = "grp_1"
	a = ms.GroupOf(ta)
	for i := 2; ; i++ {
		tb = fmt.Sprintf("grp_%d", i)
		if b = ms.GroupOf(tb); b != a {
			return a, b, ta, tb
		}
	}
}
