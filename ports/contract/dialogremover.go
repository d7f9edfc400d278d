package contract

import (
	"context"
	"testing"

	"github.com/imdhq/imd/core/domain/dialog"
	"github.com/imdhq/imd/ports"
)

// RemovableDialogs is a list store that also takes dialogs off users' lists.
type RemovableDialogs interface {
	ports.DialogStore
	ports.DialogRemover
}

// DialogRemover checks ports.DialogRemover through the lists of ports.DialogStore. fresh must
// return a new tenant on every call.
func DialogRemover(t *testing.T, fresh func(t *testing.T) (RemovableDialogs, string)) {
	cases := []struct {
		name string
		run  func(t *testing.T, d RemovableDialogs, f DialogFixture)
	}{
		{"an unread, muted, pinned dialog leaves every list", removeUnread},
		{"a read dialog leaves, absent ones are no error", removeRead},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			d, tenant := fresh(t)
			c.run(t, d, DialogFixture{Tenant: tenant, Dialogs: d})
		})
	}
}

func removeUnread(t *testing.T, d RemovableDialogs, f DialogFixture) {
	ctx := context.Background()
	apply(t, f, dialogUpdate("m1", 1, 1000, 1, dialog.Batch{Index: 0, Users: []int64{1, 2, 3}}))
	other := dialogUpdate("o1", 1, 1500, 1, dialog.Batch{Index: 0, Users: []int64{2}})
	other.ConversationID, other.Preview.ConversationID = 600, 600
	apply(t, f, other)
	if err := d.SetMuted(ctx, f.Tenant, 2, dialogConv, true); err != nil {
		t.Fatal(err)
	}
	if err := d.SetPinned(ctx, f.Tenant, 2, dialogConv, 5000); err != nil {
		t.Fatal(err)
	}
	if err := d.RemoveDialog(ctx, f.Tenant, 2, dialogConv); err != nil {
		t.Fatalf("RemoveDialog: %v", err)
	}
	if got := changed(t, f, 2, 0, 100); len(got) != 1 || got[0].ConversationID != 600 || got[0].Unread != 1 {
		t.Fatalf("user 2 after removal: %+v, want only conversation 600", got)
	}
	if e := entryOf(t, f, 3); e.Unread != 1 || e.Preview.Seq != 1 {
		t.Fatalf("another member after removal: %+v, want its count and the shared preview", e)
	}
	// Rejoining starts clean: no old count, mute or pin comes back with the next message.
	apply(t, f, dialogUpdate("m2", 2, 2000, 1, dialog.Batch{Index: 0, Users: []int64{2}}))
	if e := entryOf(t, f, 2); e.Unread != 1 || e.Muted || e.Pinned || e.Score != 2000 {
		t.Fatalf("user 2 after a new message: %+v, want 1 unread, neither muted nor pinned", e)
	}
}

func removeRead(t *testing.T, d RemovableDialogs, f DialogFixture) {
	ctx := context.Background()
	apply(t, f, dialogUpdate("m1", 1, 1000, 1, dialog.Batch{Index: 0, Users: []int64{2}}))
	if err := d.MarkRead(ctx, f.Tenant, 2, dialogConv); err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second time there is nothing left to remove
		if err := d.RemoveDialog(ctx, f.Tenant, 2, dialogConv); err != nil {
			t.Fatalf("RemoveDialog: %v", err)
		}
	}
	if got := changed(t, f, 2, 0, 100); len(got) != 0 {
		t.Fatalf("user 2 after removal: %+v, want no dialogs", got)
	}
	if err := d.RemoveDialog(ctx, f.Tenant, 9, dialogConv); err != nil {
		t.Fatalf("RemoveDialog for a user without lists: %v", err)
	}
}
