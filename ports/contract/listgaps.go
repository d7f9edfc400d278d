package contract

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/imdhq/imd/core/domain/dialog"
	"github.com/imdhq/imd/ports"
)

// ListGapsFixture is a gap record and one fresh tenant.
type ListGapsFixture struct {
	Tenant string
	Gaps   ports.ListGaps
}

// ListGaps checks ports.ListGaps, the seqs deliver consumers went past without their jobs
// (seed 003 §20 item 13). fresh must return a new tenant on every call.
func ListGaps(t *testing.T, fresh func(t *testing.T) ListGapsFixture) {
	cases := []struct {
		name string
		run  func(t *testing.T, f ListGapsFixture)
	}{
		{"due gaps come oldest first, up to the time and the limit", gapsDueInOrder},
		{"a gap noted again keeps its first time", gapKeepsFirstTime},
		{"close removes the named gaps only", gapClose},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.run(t, fresh(t))
		})
	}
}

var gapsEpoch = time.Date(2026, 12, 5, 8, 0, 0, 0, time.UTC)

func noteGaps(t *testing.T, f ListGapsFixture, at time.Time, gaps ...dialog.Gap) {
	t.Helper()
	if err := f.Gaps.Note(context.Background(), f.Tenant, at, gaps...); err != nil {
		t.Fatalf("Note: %v", err)
	}
}

func dueGaps(t *testing.T, f ListGapsFixture, by time.Time, limit int) []dialog.Gap {
	t.Helper()
	got, err := f.Gaps.Due(context.Background(), f.Tenant, by, limit)
	if err != nil {
		t.Fatalf("Due: %v", err)
	}
	return got
}

func sameGaps(t *testing.T, what string, got, want []dialog.Gap) {
	t.Helper()
	if !slices.EqualFunc(got, want, func(a, b dialog.Gap) bool {
		return a.Topic == b.Topic && a.ConversationID == b.ConversationID && a.From == b.From && a.To == b.To && a.Noted.Equal(b.Noted)
	}) {
		t.Fatalf("%s: %+v, want %+v", what, got, want)
	}
}

func gapsDueInOrder(t *testing.T, f ListGapsFixture) {
	a := dialog.Gap{Topic: "grp_7", ConversationID: 70, From: 3, To: 4}
	b := dialog.Gap{Topic: "p2p_1_2", ConversationID: 12, From: 9, To: 9}
	c := dialog.Gap{Topic: "grp_7", ConversationID: 70, From: 8, To: 12}
	noteGaps(t, f, gapsEpoch.Add(2*time.Second), c)
	noteGaps(t, f, gapsEpoch.Add(time.Second), b)
	noteGaps(t, f, gapsEpoch, a)
	at := func(g dialog.Gap, d time.Duration) dialog.Gap { g.Noted = gapsEpoch.Add(d); return g }
	sameGaps(t, "all due", dueGaps(t, f, gapsEpoch.Add(time.Minute), 10), []dialog.Gap{at(a, 0), at(b, time.Second), at(c, 2*time.Second)})
	sameGaps(t, "due by the second time", dueGaps(t, f, gapsEpoch.Add(time.Second), 10), []dialog.Gap{at(a, 0), at(b, time.Second)})
	sameGaps(t, "limit", dueGaps(t, f, gapsEpoch.Add(time.Minute), 1), []dialog.Gap{at(a, 0)})
	sameGaps(t, "none due before", dueGaps(t, f, gapsEpoch.Add(-time.Second), 10), nil)
}

func gapKeepsFirstTime(t *testing.T, f ListGapsFixture) {
	g := dialog.Gap{Topic: "grp_8", ConversationID: 80, From: 5, To: 6}
	noteGaps(t, f, gapsEpoch, g)
	noteGaps(t, f, gapsEpoch.Add(time.Hour), g)
	first := g
	first.Noted = gapsEpoch
	sameGaps(t, "after noting twice", dueGaps(t, f, gapsEpoch.Add(2*time.Hour), 10), []dialog.Gap{first})
}

func gapClose(t *testing.T, f ListGapsFixture) {
	a := dialog.Gap{Topic: "grp_9", ConversationID: 90, From: 1, To: 1}
	b := dialog.Gap{Topic: "grp_9", ConversationID: 90, From: 2, To: 5}
	noteGaps(t, f, gapsEpoch, a, b)
	// The time read back is not part of a gap's identity.
	read := dueGaps(t, f, gapsEpoch, 10)
	if err := f.Gaps.Close(context.Background(), f.Tenant, read[0], dialog.Gap{Topic: "grp_9", ConversationID: 90, From: 7, To: 7}); err != nil {
		t.Fatalf("Close: %v", err)
	}
	b.Noted = gapsEpoch
	sameGaps(t, "after closing the first and an absent one", dueGaps(t, f, gapsEpoch, 10), []dialog.Gap{b})
}
