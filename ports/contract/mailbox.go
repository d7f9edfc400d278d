package contract

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/imdhq/imd/core/domain/mailbox"
	"github.com/imdhq/imd/ports"
)

// MailboxFixture is a mailbox and one fresh tenant.
type MailboxFixture struct {
	Tenant  string
	Mailbox ports.Mailbox
	ids     *atomic.Int64 // event ids of the test
}

// Mailbox checks ports.Mailbox (seed 003 §10.3): one seq per user across devices, a device
// reads its own and the all-devices events, cursors per device. fresh must return a new tenant
// on every call.
func Mailbox(t *testing.T, fresh func(t *testing.T) MailboxFixture) {
	cases := []struct {
		name string
		run  func(t *testing.T, f MailboxFixture)
	}{
		{"one seq per user across devices", mailboxSeqs},
		{"a device reads its own and the all-devices events", mailboxSince},
		{"concurrent appends get distinct seqs in order", mailboxConcurrent},
		{"concurrent appends to new users that overlap all succeed", mailboxNewUsersConcurrent},
		{"invalid events store nothing", mailboxInvalid},
		{"cursors per device", mailboxCursors},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := fresh(t)
			f.ids = new(atomic.Int64)
			c.run(t, f)
		})
	}
}

func (f MailboxFixture) event(user int64, device uint64, typ mailbox.Type) mailbox.Event {
	return mailbox.Event{
		ID: f.ids.Add(1), User: user, Device: device, Type: typ, ConversationID: 77,
		Payload: json.RawMessage(`{"topic":"grp_7","msg_id":123,"seq":4}`), CreatedAt: time.Date(2030, 1, 2, 3, 4, 5, 6e6, time.UTC),
	}
}

func mustAppendEvents(t *testing.T, f MailboxFixture, events ...mailbox.Event) []mailbox.Event {
	t.Helper()
	got, err := f.Mailbox.Append(context.Background(), f.Tenant, events)
	if err != nil {
		t.Fatalf("Append: %v", err)
	}
	if len(got) != len(events) {
		t.Fatalf("Append returned %d events for %d", len(got), len(events))
	}
	return got
}

func since(t *testing.T, f MailboxFixture, user int64, device uint64, after int64, limit int) []mailbox.Event {
	t.Helper()
	got, err := f.Mailbox.Since(context.Background(), f.Tenant, user, device, after, limit)
	if err != nil {
		t.Fatalf("Since: %v", err)
	}
	return got
}

func seqsOf(es []mailbox.Event) []int64 {
	out := []int64{}
	for _, e := range es {
		out = append(out, e.Seq)
	}
	return out
}

func mailboxSeqs(t *testing.T, f MailboxFixture) {
	got := mustAppendEvents(t, f,
		f.event(1, mailbox.AllDevices, mailbox.Kick), f.event(1, 5, mailbox.MissedMessage),
		f.event(2, mailbox.AllDevices, mailbox.Friend), f.event(1, 6, mailbox.MissedMessage))
	if s := seqsOf(got); !slices.Equal(s, []int64{1, 2, 1, 3}) {
		t.Fatalf("seqs = %v, want [1 2 1 3]", s)
	}
	more := mustAppendEvents(t, f, f.event(1, 5, mailbox.Member))
	if more[0].Seq != 4 {
		t.Fatalf("next seq = %d, want 4", more[0].Seq)
	}
}

func mailboxSince(t *testing.T, f MailboxFixture) {
	const bigDevice = 1<<63 + 5
	stored := mustAppendEvents(t, f,
		f.event(1, mailbox.AllDevices, mailbox.Kick), f.event(1, bigDevice, mailbox.MissedMessage),
		f.event(1, 6, mailbox.MissedMessage), f.event(1, mailbox.AllDevices, mailbox.Member))
	got := since(t, f, 1, bigDevice, 0, 10)
	if s := seqsOf(got); !slices.Equal(s, []int64{1, 2, 4}) {
		t.Fatalf("device's seqs = %v, want [1 2 4]", s)
	}
	e := got[1]
	w := stored[1]
	if e.ID != w.ID || e.User != 1 || e.Device != bigDevice || e.Type != mailbox.MissedMessage || e.ConversationID != 77 ||
		!sameJSON(e.Payload, w.Payload) || !e.CreatedAt.Equal(w.CreatedAt) {
		t.Fatalf("event = %+v, want %+v", e, w)
	}
	if s := seqsOf(since(t, f, 1, bigDevice, 1, 1)); !slices.Equal(s, []int64{2}) {
		t.Fatalf("after 1, limit 1 = %v, want [2]", s)
	}
	if s := seqsOf(since(t, f, 1, 6, 2, 10)); !slices.Equal(s, []int64{3, 4}) {
		t.Fatalf("other device after 2 = %v, want [3 4]", s)
	}
	if s := seqsOf(since(t, f, 2, 6, 0, 10)); len(s) != 0 {
		t.Fatalf("another user's events = %v", s)
	}
}

func mailboxConcurrent(t *testing.T, f MailboxFixture) {
	const n = 20
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := f.Mailbox.Append(context.Background(), f.Tenant, []mailbox.Event{
				f.event(1, uint64(i%3), mailbox.MissedMessage), f.event(2, 0, mailbox.Kick),
			})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("Append: %v", err)
		}
	}
	for _, user := range []int64{1, 2} {
		var all []int64
		for _, device := range []uint64{0, 1, 2} {
			all = append(all, seqsOf(since(t, f, user, device, 0, 100))...)
		}
		slices.Sort(all)
		all = slices.Compact(all)
		if len(all) != n || all[0] != 1 || all[n-1] != n {
			t.Fatalf("user %d seqs = %v, want 1..%d", user, all, n)
		}
	}
}

// mailboxNewUsersConcurrent is many groups made at once (a bench's setup, a burst of sign-ups):
// each append names users no event has named yet, shared with other appends running beside it.
// Each append must succeed: a lost one loses live MEMBER events.
func mailboxNewUsersConcurrent(t *testing.T, f MailboxFixture) {
	const groups, members = 24, 8
	var wg sync.WaitGroup
	errs := make(chan error, groups)
	for g := range groups {
		wg.Add(1)
		go func() {
			defer wg.Done()
			events := make([]mailbox.Event, 0, members)
			for m := range members {
				// Group g has users 1000+g*3 .. +members-1: neighbours share five users.
				events = append(events, f.event(int64(1000+g*3+m), mailbox.AllDevices, mailbox.Member))
			}
			_, err := f.Mailbox.Append(context.Background(), f.Tenant, events)
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("Append: %v", err)
		}
	}
	for user := int64(1000); user < 1000+(groups-1)*3+members; user++ {
		got := seqsOf(since(t, f, user, 0, 0, 100))
		for i, seq := range got {
			if seq != int64(i+1) {
				t.Fatalf("user %d seqs = %v, want 1..%d", user, got, len(got))
			}
		}
	}
}

func mailboxInvalid(t *testing.T, f MailboxFixture) {
	noType := f.event(1, 0, 0)
	big := f.event(1, 0, mailbox.Kick)
	big.Payload = json.RawMessage(`"` + string(make([]byte, mailbox.MaxPayload)) + `"`)
	for _, bad := range []mailbox.Event{noType, big, {User: 1, Type: mailbox.Kick}} {
		if _, err := f.Mailbox.Append(context.Background(), f.Tenant, []mailbox.Event{f.event(1, 0, mailbox.Kick), bad}); err == nil {
			t.Fatalf("Append accepted %+v", bad)
		}
	}
	if got := since(t, f, 1, 1, 0, 10); len(got) != 0 {
		t.Fatalf("a refused batch stored %d events", len(got))
	}
}

func mailboxCursors(t *testing.T, f MailboxFixture) {
	ctx := context.Background()
	c, err := f.Mailbox.Cursor(ctx, f.Tenant, 1, 5)
	if err != nil || c != (mailbox.Cursor{User: 1, Device: 5}) {
		t.Fatalf("Cursor before any sync = %+v, %v", c, err)
	}
	for _, want := range []mailbox.Cursor{{User: 1, Device: 5, MailboxSeq: 3, DialogScore: 1000}, {User: 1, Device: 5, MailboxSeq: 7, DialogScore: 900}} {
		if err := f.Mailbox.SaveCursor(ctx, f.Tenant, want); err != nil {
			t.Fatal(err)
		}
		if got, err := f.Mailbox.Cursor(ctx, f.Tenant, 1, 5); err != nil || got != want {
			t.Fatalf("Cursor = %+v, %v; want %+v", got, err, want)
		}
	}
	if got, err := f.Mailbox.Cursor(ctx, f.Tenant, 1, 6); err != nil || got.MailboxSeq != 0 {
		t.Fatalf("another device's cursor = %+v, %v", got, err)
	}
	if err := f.Mailbox.SaveCursor(ctx, f.Tenant, mailbox.Cursor{User: 1}); err == nil {
		t.Fatal("SaveCursor accepted device 0")
	}
}
