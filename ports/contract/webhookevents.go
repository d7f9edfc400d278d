package contract

import (
	"context"
	"encoding/json"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/imdhq/imd/core/domain/social"
	"github.com/imdhq/imd/core/domain/webhook"
	"github.com/imdhq/imd/ports"
)

// WebhookEventsFactory returns a social graph and a report store that record their webhook
// events in the returned reader, and an empty tenant.
type WebhookEventsFactory func(t *testing.T) (g SocialGraph, r ports.Reports, events ports.WebhookEvents, tenant string)

// WebhookEvents runs the contract of the member, friendship and report events (docs/DESIGN.md
// issue-32 part 2 "Member, friendship and report events"): each change records one event of
// what it did, in the order of the changes, and nothing when it changed nothing (a member
// added again, a friendship made or ended twice, a repeated report, a P2P pair's rows), each
// naming the user who acted (the accepting user of a request; none for an operator); old
// records are deleted oldest first, a batch at a time, never from the first one an endpoint
// has not passed on; the first record made in a window of time is found by its time.
func WebhookEvents(t *testing.T, newStores WebhookEventsFactory) {
	g, reports, events, tenant := newStores(t)
	ctx := context.Background()
	mustUsers(t, g, tenant, 1, 2, 3, 4)
	report := social.Report{ID: 70, Reporter: 3, Topic: "grp_10", Seq: 2, Reason: "spam", Status: social.ReportOpen,
		CreatedAt: time.Now().UTC().Truncate(time.Millisecond)}
	report.UpdatedAt = report.CreatedAt
	steps := []struct {
		name string
		do   func() error
	}{
		{"user 1 creates a group", func() error {
			_, err := g.CreateGroup(ctx, tenant, social.Group{ID: 10, Owner: 1}, 1000, []int64{2, 3}, 1)
			return err
		}},
		{"an operator adds a member and a known one", func() error { return g.AddMembers(ctx, tenant, "grp_10", []int64{3, 4}, 0) }},
		{"add a known member", func() error { return g.AddMembers(ctx, tenant, "grp_10", []int64{3}, 0) }},
		{"the owner removes a member and a stranger", func() error { return g.RemoveMembers(ctx, tenant, 10, []int64{2, 42}, 1) }},
		{"remove a stranger", func() error { return g.RemoveMembers(ctx, tenant, 10, []int64{42}, 0) }},
		{"befriend", func() error { return g.AddFriendship(ctx, tenant, 2, 1) }},
		{"befriend again", func() error { return g.AddFriendship(ctx, tenant, 1, 2) }},
		{"request", func() error {
			return g.RequestFriend(ctx, tenant, social.FriendRequest{From: 4, To: 3, CreatedAt: time.Now().UTC()})
		}},
		{"3 accepts", func() error { return g.AcceptFriendRequest(ctx, tenant, 4, 3) }},
		{"2 unfriends", func() error { return g.RemoveFriendship(ctx, tenant, 1, 2, 2) }},
		{"unfriend again", func() error { return g.RemoveFriendship(ctx, tenant, 1, 2, 0) }},
		{"a pair's conversation", func() error {
			_, err := g.EnsureP2P(ctx, tenant, 1, 3, 3000)
			return err
		}},
		{"report", func() error {
			_, err := reports.AddReport(ctx, tenant, report)
			return err
		}},
		{"report again", func() error {
			again := report
			again.ID = 71
			_, err := reports.AddReport(ctx, tenant, again)
			return err
		}},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
	}
	type event struct {
		Type  webhook.EventType
		Topic string
		Data  any
	}
	want := []event{
		{webhook.MemberJoined, "grp_10", webhook.MemberData{Topic: "grp_10", GroupID: 10, Users: []int64{1, 2, 3}, By: 1}},
		{webhook.MemberJoined, "grp_10", webhook.MemberData{Topic: "grp_10", GroupID: 10, Users: []int64{4}}},
		{webhook.MemberLeft, "grp_10", webhook.MemberData{Topic: "grp_10", GroupID: 10, Users: []int64{2}, By: 1}},
		{webhook.FriendshipChanged, "p2p_1_2", webhook.FriendshipData{Users: [2]int64{1, 2}, Friends: true}},
		{webhook.FriendshipChanged, "p2p_3_4", webhook.FriendshipData{Users: [2]int64{3, 4}, Friends: true, By: 3}},
		{webhook.FriendshipChanged, "p2p_1_2", webhook.FriendshipData{Users: [2]int64{1, 2}, Friends: false, By: 2}},
		{webhook.ReportFiled, "grp_10", webhook.ReportData{ReportID: 70, Reporter: 3, Topic: "grp_10", Seq: 2, Reason: "spam"}},
	}
	from, until := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC), time.Now().Add(time.Hour)
	got, err := events.EventsAfter(ctx, tenant, 0, from, until, 100)
	if err != nil {
		t.Fatalf("EventsAfter: %v", err)
	}
	if len(got) != len(want) {
		t.Fatalf("EventsAfter = %d records %+v, want %d", len(got), got, len(want))
	}
	for i, r := range got {
		data := reflect.New(reflect.TypeOf(want[i].Data))
		if err := json.Unmarshal(r.Data, data.Interface()); err != nil {
			t.Fatalf("record %d data %s: %v", i, r.Data, err)
		}
		g := event{r.Type, r.Topic, data.Elem().Interface()}
		if !reflect.DeepEqual(g, want[i]) || (i > 0 && r.ID <= got[i-1].ID) || r.At.IsZero() {
			t.Fatalf("record %d = %+v (%+v), want %+v with an id above the last", i, r, g, want[i])
		}
	}
	if page, err := events.EventsAfter(ctx, tenant, got[2].ID, from, until, 2); err != nil || len(page) != 2 || page[0].ID != got[3].ID || page[1].ID != got[4].ID {
		t.Fatalf("EventsAfter(%d, limit 2) = %+v, %v; want records 3 and 4", got[2].ID, page, err)
	}
	// The report's time is its own, taken before the steps ran: the record made earliest may
	// have the last id.
	made := make([]stamped, len(got))
	for i, r := range got {
		made[i] = stamped{r.ID, r.At}
	}
	if page, err := events.EventsAfter(ctx, tenant, 0, from, earliest(made), 100); err != nil || len(page) != 0 {
		t.Fatalf("EventsAfter until the earliest record = %+v, %v; want none", page, err)
	}
	firstInWindows(t, "FirstEvent", made, from, until, func(from, until time.Time) (int64, bool, error) {
		return events.FirstEvent(ctx, tenant, from, until)
	})
	all := int64(math.MaxInt64)
	if n, err := events.DeleteEventsBefore(ctx, tenant, until, all, 2); err != nil || n != 2 {
		t.Fatalf("DeleteEventsBefore(limit 2) = %d, %v; want 2", n, err)
	}
	if n, err := events.DeleteEventsBefore(ctx, tenant, from, all, 100); err != nil || n != 0 {
		t.Fatalf("DeleteEventsBefore(before them all) = %d, %v; want 0", n, err)
	}
	if left, err := events.EventsAfter(ctx, tenant, 0, from, until, 100); err != nil || len(left) != len(want)-2 || left[0].ID != got[2].ID {
		t.Fatalf("after deleting the 2 oldest: %+v, %v; want records from the third", left, err)
	}
	// An endpoint that has not passed the fifth record holds it and every one after it.
	if n, err := events.DeleteEventsBefore(ctx, tenant, until, got[4].ID, 100); err != nil || n != 2 {
		t.Fatalf("DeleteEventsBefore(below the fifth) = %d, %v; want the third and the fourth", n, err)
	}
	if left, err := events.EventsAfter(ctx, tenant, 0, from, until, 100); err != nil || len(left) != len(want)-4 || left[0].ID != got[4].ID {
		t.Fatalf("after deleting below the fifth: %+v, %v; want records from the fifth", left, err)
	}
}

// stamped is a record of a stream as the checks of its windows see it: its id and its time.
type stamped struct {
	id int64
	at time.Time
}

// earliest is the time of the record made first, whatever its id.
func earliest(made []stamped) time.Time {
	out := made[0].at
	for _, r := range made {
		if r.at.Before(out) {
			out = r.at
		}
	}
	return out
}

// firstInWindows checks first, the first record of a stream made in a window of time, against
// made (by id, all made in [from, until)): the smallest id made at or after from and before
// until, whatever came before it.
func firstInWindows(t *testing.T, name string, made []stamped, from, until time.Time, first func(from, until time.Time) (int64, bool, error)) {
	t.Helper()
	firstFrom := func(from, until time.Time) (int64, bool) {
		for _, r := range made {
			if !r.at.Before(from) && r.at.Before(until) {
				return r.id, true
			}
		}
		return 0, false
	}
	for _, w := range []struct {
		name        string
		from, until time.Time
	}{
		{"all of them", from, until},
		{"from the fourth", made[3].at, until},
		{"from the last", made[len(made)-1].at, until},
		{"up to the first", from, made[0].at},
		{"up to the earliest", from, earliest(made)},
		{"after them", until, until.Add(time.Hour)},
	} {
		wantID, wantFound := firstFrom(w.from, w.until)
		if id, found, err := first(w.from, w.until); err != nil || id != wantID || found != wantFound {
			t.Fatalf("%s %s = %d, %v, %v; want %d, %v", name, w.name, id, found, err, wantID, wantFound)
		}
	}
}
