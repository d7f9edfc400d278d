package contract

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/imdhq/imd/core/domain/msgref"
	"github.com/imdhq/imd/ports"
)

// ReactionsFixture is the reaction and pin stores of one fresh tenant.
type ReactionsFixture struct {
	Tenant    string
	Reactions ports.Reactions
	Pins      ports.Pins
}

// Reactions checks ports.Reactions and ports.Pins (issue 31): adds and pins are idempotent and
// keep the first time, the limits refuse without storing, removes report whether there was
// something, a page's summaries come in one call with the viewer's own marked and emojis in
// the order of first use, and pins list newest first. fresh must return a new tenant on every
// call.
func Reactions(t *testing.T, fresh func(t *testing.T) ReactionsFixture) {
	for _, c := range []struct {
		name string
		run  func(t *testing.T, f ReactionsFixture)
	}{
		{"add is idempotent", reactionAddIdempotent},
		{"limits", reactionLimits},
		{"remove", reactionRemove},
		{"summaries", reactionSummaries},
		{"pins", pinsKeptLimitedListed},
	} {
		t.Run(c.name, func(t *testing.T) { c.run(t, fresh(t)) })
	}
}

// reactionTime is a stored time: whole milliseconds, UTC.
var reactionTime = time.Date(2030, 3, 4, 5, 6, 7, 8_000_000, time.UTC)

var roomyLimits = msgref.ReactionLimits{PerMessage: 50, PerUser: 20}

func addReaction(t *testing.T, f ReactionsFixture, r msgref.Reaction, lim msgref.ReactionLimits) (msgref.ReactionOutcome, time.Time) {
	t.Helper()
	outcome, at, err := f.Reactions.AddReaction(context.Background(), f.Tenant, r, lim)
	if err != nil {
		t.Fatal(err)
	}
	return outcome, at
}

func reactionAddIdempotent(t *testing.T, f ReactionsFixture) {
	r := msgref.Reaction{Topic: "grp_1", Seq: 5, Emoji: "👍", User: 7, At: reactionTime}
	if outcome, at := addReaction(t, f, r, roomyLimits); outcome != msgref.ReactionChanged || !at.Equal(reactionTime) {
		t.Fatalf("first add: %v at %v, want changed at %v", outcome, at, reactionTime)
	}
	again := r
	again.At = reactionTime.Add(time.Hour)
	if outcome, at := addReaction(t, f, again, roomyLimits); outcome != msgref.ReactionUnchanged || !at.Equal(reactionTime) {
		t.Fatalf("second add: %v at %v, want unchanged at the first time %v", outcome, at, reactionTime)
	}
	got, err := f.Reactions.Reactors(context.Background(), f.Tenant, "grp_1", 5, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].User != 7 || got[0].Emoji != "👍" || !got[0].At.Equal(reactionTime) {
		t.Fatalf("reactors after two adds: %+v, want the one first reaction", got)
	}
}

func reactionLimits(t *testing.T, f ReactionsFixture) {
	lim := msgref.ReactionLimits{PerMessage: 2, PerUser: 2}
	at := reactionTime
	for _, tt := range []struct {
		user  int64
		emoji string
		want  msgref.ReactionOutcome
	}{
		{1, "👍", msgref.ReactionChanged},
		{2, "❤️", msgref.ReactionChanged},
		{3, "😂", msgref.ReactionEmojiLimit}, // a third distinct emoji
		{3, "👍", msgref.ReactionChanged},    // an emoji the message has
		{1, "❤️", msgref.ReactionChanged},
		{1, "😂", msgref.ReactionEmojiLimit},
		{1, "👍", msgref.ReactionUnchanged}, // a retry passes whatever the limits
	} {
		at = at.Add(time.Second)
		if got, _ := addReaction(t, f, msgref.Reaction{Topic: "grp_1", Seq: 1, Emoji: tt.emoji, User: tt.user, At: at}, lim); got != tt.want {
			t.Fatalf("user %d adds %s: %v, want %v", tt.user, tt.emoji, got, tt.want)
		}
	}
	perUser := msgref.ReactionLimits{PerMessage: 10, PerUser: 2}
	if got, _ := addReaction(t, f, msgref.Reaction{Topic: "grp_1", Seq: 1, Emoji: "🎉", User: 1, At: at}, perUser); got != msgref.ReactionUserLimit {
		t.Fatalf("a third emoji of user 1: %v, want the user limit", got)
	}
	all, err := f.Reactions.Reactors(context.Background(), f.Tenant, "grp_1", 1, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 4 {
		t.Fatalf("%d reactions stored, want the 4 admitted: %+v", len(all), all)
	}
}

func reactionRemove(t *testing.T, f ReactionsFixture) {
	ctx := context.Background()
	r := msgref.Reaction{Topic: "p2p_1_2", Seq: 3, Emoji: "👍", User: 1, At: reactionTime}
	addReaction(t, f, r, roomyLimits)
	for i, want := range []msgref.ReactionOutcome{msgref.ReactionChanged, msgref.ReactionUnchanged} {
		got, err := f.Reactions.RemoveReaction(ctx, f.Tenant, r)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("remove %d: %v, want %v", i+1, got, want)
		}
	}
	if outcome, _ := addReaction(t, f, r, roomyLimits); outcome != msgref.ReactionChanged {
		t.Fatalf("add after remove: %v, want changed", outcome)
	}
}

func reactionSummaries(t *testing.T, f ReactionsFixture) {
	at := reactionTime
	for _, r := range []msgref.Reaction{
		{Seq: 1, Emoji: "❤️", User: 2},
		{Seq: 1, Emoji: "👍", User: 1},
		{Seq: 1, Emoji: "❤️", User: 1},
		{Seq: 1, Emoji: "❤️", User: 3},
		{Seq: 3, Emoji: "🎉", User: 2},
		{Seq: 9, Emoji: "🎉", User: 2}, // not asked for
	} {
		at = at.Add(time.Second)
		r.Topic, r.At = "grp_4", at
		addReaction(t, f, r, roomyLimits)
	}
	addReaction(t, f, msgref.Reaction{Topic: "grp_5", Seq: 1, Emoji: "😂", User: 1, At: at}, roomyLimits)
	got, err := f.Reactions.ReactionSummaries(context.Background(), f.Tenant, "grp_4", []int64{1, 2, 3}, 1)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int64][]msgref.ReactionCount{
		1: {{Emoji: "❤️", Count: 3, Mine: true}, {Emoji: "👍", Count: 1, Mine: true}},
		3: {{Emoji: "🎉", Count: 1}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("summaries %+v, want %+v", got, want)
	}
	none, err := f.Reactions.ReactionSummaries(context.Background(), f.Tenant, "grp_4", nil, 1)
	if err != nil || len(none) != 0 {
		t.Fatalf("summaries of no seqs: %v, %v", none, err)
	}
}

func pinsKeptLimitedListed(t *testing.T, f ReactionsFixture) {
	ctx := context.Background()
	pinAt := func(seq int64, by int64, at time.Time, max int) (msgref.Pin, bool, error) {
		return f.Pins.AddPin(ctx, f.Tenant, msgref.Pin{Topic: "grp_1", Seq: seq, By: by, At: at}, max)
	}
	first, added, err := pinAt(4, 1, reactionTime, 2)
	if err != nil || !added || first.Seq != 4 || first.By != 1 || !first.At.Equal(reactionTime) {
		t.Fatalf("pin: %+v added %v, %v", first, added, err)
	}
	if again, added, err := pinAt(4, 2, reactionTime.Add(time.Hour), 2); err != nil || added || again != first {
		t.Fatalf("pin again: %+v added %v, %v; want the first pin, not added", again, added, err)
	}
	if _, _, err := pinAt(6, 1, reactionTime.Add(time.Minute), 2); err != nil {
		t.Fatal(err)
	}
	if _, added, err := pinAt(8, 1, reactionTime.Add(2*time.Minute), 2); !errors.Is(err, msgref.ErrPinsFull) || added {
		t.Fatalf("a third pin with room for two: added %v, %v; want ErrPinsFull", added, err)
	}
	if _, _, err := f.Pins.AddPin(ctx, f.Tenant, msgref.Pin{Topic: "grp_2", Seq: 1, By: 1, At: reactionTime}, 2); err != nil {
		t.Fatalf("another topic has its own room: %v", err)
	}
	list := func() []int64 {
		t.Helper()
		pins, err := f.Pins.Pins(ctx, f.Tenant, "grp_1")
		if err != nil {
			t.Fatal(err)
		}
		var seqs []int64
		for _, p := range pins {
			seqs = append(seqs, p.Seq)
		}
		return seqs
	}
	if got := list(); !reflect.DeepEqual(got, []int64{6, 4}) {
		t.Fatalf("pins %v, want [6 4], newest first", got)
	}
	for i, want := range []bool{true, false} {
		removed, err := f.Pins.RemovePin(ctx, f.Tenant, "grp_1", 6)
		if err != nil || removed != want {
			t.Fatalf("unpin %d: %v, %v; want %v", i+1, removed, err, want)
		}
	}
	if got := list(); !reflect.DeepEqual(got, []int64{4}) {
		t.Fatalf("pins after unpin %v, want [4]", got)
	}
}
