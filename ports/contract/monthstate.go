package contract

import (
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
				if err := f.Months.MarkReady(t.Context(), f.Tenant, m); err != nil {
					t.Fatalf("%s: MarkReady(%s): %v", st.name, m, err)
				}
			}
			got, err := f.Months.Advance(t.Context(), f.Tenant, st.advance)
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
		jan, feb, mar, apr := month.Month(203101), month.Month(203102), month.Month(203103), month.Month(203104)
		for _, m := range []month.Month{jan, feb, mar} {
			if err := f.Months.MarkReady(t.Context(), f.Tenant, m); err != nil {
				t.Fatalf("MarkReady(%s): %v", m, err)
			}
		}
		if _, err := f.Months.Advance(t.Context(), f.Tenant, jan); err != nil {
			t.Fatalf("Advance(%s): %v", jan, err)
		}
		now, err := f.Months.Now(t.Context())
		if err != nil {
			t.Fatalf("Now: %v", err)
		}
		soon, later := now.Add(50*time.Millisecond), now.Add(time.Hour)
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
			got, err := f.Months.SwitchAt(t.Context(), f.Tenant, st.to, st.at)
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
			if got, err := f.Months.Advance(t.Context(), f.Tenant, jan); err != nil || got != st.want {
				t.Fatalf("%s: then Advance(%s) = %s, %v; want %s", st.name, jan, got, err, st.want)
			}
		}
	})

	t.Run("invalid month is rejected", func(t *testing.T) {
		t.Parallel()
		f := fresh(t)
		for _, m := range []month.Month{0, 203113, 199912} {
			if err := f.Months.MarkReady(t.Context(), f.Tenant, m); err == nil {
				t.Errorf("MarkReady(%d) succeeded", m)
			}
			if _, err := f.Months.Advance(t.Context(), f.Tenant, m); err == nil {
				t.Errorf("Advance(%d) succeeded", m)
			}
			if _, err := f.Months.SwitchAt(t.Context(), f.Tenant, m, time.Now()); err == nil {
				t.Errorf("SwitchAt(%d) succeeded", m)
			}
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
