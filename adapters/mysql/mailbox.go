package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/imdhq/imd/adapters/mysql/sqlcdb"
	"github.com/imdhq/imd/core/domain/mailbox"
	"github.com/imdhq/imd/ports"
)

// Mailbox implements ports.Mailbox over t_mailbox_events and t_device_sync_cursors. Device ids
// are unsigned on the wire and signed in the schema: they are stored bit for bit, so a device
// id above 2^63 reads back unchanged.
type Mailbox struct {
	cluster *Cluster
	now     func() time.Time
}

var _ ports.Mailbox = (*Mailbox)(nil)

// NewMailbox returns the mailbox over the provisioned tenants of c.
func NewMailbox(c *Cluster) *Mailbox {
	return &Mailbox{cluster: c, now: func() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }}
}

// Append stores the events in one transaction that holds the mailbox heads of their users
// (see sql/queries/mailbox.sql), so each user's seqs commit in order.
func (b *Mailbox) Append(ctx context.Context, tenant string, events []mailbox.Event) ([]mailbox.Event, error) {
	t, err := b.cluster.tenant(tenant)
	if err != nil {
		return nil, err
	}
	if len(events) == 0 {
		return nil, nil
	}
	if err := validEvents(events); err != nil {
		return nil, err
	}
	out := slices.Clone(events)
	if err := retryTransient(func() error { return b.append(ctx, t.db, out) }); err != nil {
		return nil, fmt.Errorf("append %d mailbox events: %w", len(events), err)
	}
	return out, nil
}

func validEvents(events []mailbox.Event) error {
	for _, e := range events {
		switch {
		case e.ID <= 0 || e.User <= 0:
			return fmt.Errorf("mailbox event needs an id and a user, got %d and %d", e.ID, e.User)
		case e.Type <= 0:
			return fmt.Errorf("mailbox event %d has no type", e.ID)
		case len(e.Payload) > mailbox.MaxPayload:
			return fmt.Errorf("mailbox event %d: payload of %d bytes exceeds %d", e.ID, len(e.Payload), mailbox.MaxPayload)
		}
	}
	return nil
}

// append assigns seqs to events in place and writes them. Its transaction only locks heads
// that exist, in user order, so appends never deadlock on one another; a user without a head
// gets one first from ensureHeads, committed on its own, and the append starts again.
func (b *Mailbox) append(ctx context.Context, db *sql.DB, events []mailbox.Event) error {
	users := make([]int64, 0, len(events))
	for _, e := range events {
		users = append(users, e.User)
	}
	slices.Sort(users)
	users = slices.Compact(users)
	now := b.now()

	missing, err := b.appendLocked(ctx, db, events, users, now)
	if err != nil || len(missing) == 0 {
		return err
	}
	if err := ensureHeads(ctx, db, missing, now); err != nil {
		return err
	}
	if missing, err = b.appendLocked(ctx, db, events, users, now); err == nil && len(missing) > 0 {
		err = fmt.Errorf("mailbox heads of %d users vanished while appending", len(missing))
	}
	return err
}

// ensureHeads makes the heads of users, each with seq 0, in its own statement: inserting a
// new head beside another transaction's locks is what deadlocked when this ran inside the
// append (InnoDB's gap and insert-intention locks on the unique key), and a head is made once
// per user, so it need not commit with the user's first events.
func ensureHeads(ctx context.Context, db *sql.DB, users []int64, now time.Time) error {
	ensure := rowBatch{sep: sepValues}
	for _, u := range users {
		p := sqlcdb.EnsureMailboxHeadsParams{UserID: u, UpdatedAt: now}
		if err := ensure.add(func(q *sqlcdb.Queries) error { return q.EnsureMailboxHeads(ctx, p) }); err != nil {
			return err
		}
	}
	if err := ensure.exec(ctx, db); err != nil {
		return fmt.Errorf("create mailbox heads: %w", err)
	}
	return nil
}

// appendLocked runs the append's transaction: lock the heads, insert the events, advance the
// heads. It returns, having written nothing, the users whose heads do not exist yet.
func (b *Mailbox) appendLocked(ctx context.Context, db *sql.DB, events []mailbox.Event, users []int64, now time.Time) ([]int64, error) {
	tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	if err != nil {
		return nil, fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback()
	q := sqlcdb.New(tx)

	rows, err := q.LockMailboxHeads(ctx, users)
	if err != nil {
		return nil, fmt.Errorf("lock mailbox heads: %w", err)
	}
	heads := make(map[int64]int64, len(rows))
	for _, r := range rows {
		heads[r.UserID] = r.MailboxSeq
	}
	if len(heads) != len(users) {
		var missing []int64
		for _, u := range users {
			if _, ok := heads[u]; !ok {
				missing = append(missing, u)
			}
		}
		return missing, nil
	}

	ins := rowBatch{sep: sepValues}
	for i := range events {
		e := &events[i]
		heads[e.User]++
		e.Seq = heads[e.User]
		p := sqlcdb.InsertMailboxEventsParams{
			ID: e.ID, UserID: e.User, DeviceID: int64(e.Device), Seq: e.Seq, EventType: int16(e.Type),
			ConversationID: sql.NullInt64{Int64: e.ConversationID, Valid: e.ConversationID != 0},
			Payload:        sql.NullString{String: string(e.Payload), Valid: len(e.Payload) > 0},
			CreatedAt:      e.CreatedAt.UTC().Truncate(time.Millisecond),
		}
		if err := ins.add(func(q *sqlcdb.Queries) error { return q.InsertMailboxEvents(ctx, p) }); err != nil {
			return nil, err
		}
	}
	if err := ins.exec(ctx, tx); err != nil {
		return nil, fmt.Errorf("insert mailbox events: %w", err)
	}
	set := rowBatch{sep: sepUnion}
	for _, u := range users {
		p := sqlcdb.SetMailboxHeadsParams{UserID: u, MailboxSeq: heads[u], UpdatedAt: now}
		if err := set.add(func(q *sqlcdb.Queries) error { return q.SetMailboxHeads(ctx, p) }); err != nil {
			return nil, err
		}
	}
	if err := set.exec(ctx, tx); err != nil {
		return nil, fmt.Errorf("advance mailbox heads: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("commit: %w", err)
	}
	return nil, nil
}

// Since reads the device's events and the all-devices events after a seq.
func (b *Mailbox) Since(ctx context.Context, tenant string, user int64, device uint64, after int64, limit int) ([]mailbox.Event, error) {
	t, err := b.cluster.tenant(tenant)
	if err != nil {
		return nil, err
	}
	if limit <= 0 {
		return nil, nil
	}
	rows, err := t.q.MailboxSince(ctx, sqlcdb.MailboxSinceParams{
		UserID: user, DeviceID: int64(device), After: after, Limit: int32(min(limit, 1<<20)),
	})
	if err != nil {
		return nil, fmt.Errorf("mailbox of %d device %d after %d: %w", user, device, after, err)
	}
	out := make([]mailbox.Event, len(rows))
	for i, r := range rows {
		out[i] = mailbox.Event{
			ID: r.ID, User: r.UserID, Device: uint64(r.DeviceID), Seq: r.Seq, Type: mailbox.Type(r.EventType),
			ConversationID: r.ConversationID.Int64, CreatedAt: r.CreatedAt.UTC(),
		}
		if r.Payload.Valid {
			out[i].Payload = []byte(r.Payload.String)
		}
	}
	return out, nil
}

// errHeadDevice: device 0's cursor row holds the user's mailbox head, not a device's cursor.
var errHeadDevice = errors.New("device 0 has no sync cursor")

// SaveCursor upserts the device's cursor row.
func (b *Mailbox) SaveCursor(ctx context.Context, tenant string, c mailbox.Cursor) error {
	t, err := b.cluster.tenant(tenant)
	if err != nil {
		return err
	}
	if c.Device == 0 {
		return fmt.Errorf("save sync cursor of %d: %w", c.User, errHeadDevice)
	}
	err = t.q.SaveSyncCursor(ctx, sqlcdb.SaveSyncCursorParams{
		UserID: c.User, DeviceID: int64(c.Device), MailboxSeq: c.MailboxSeq, DialogScore: c.DialogScore, UpdatedAt: b.now(),
	})
	if err != nil {
		return fmt.Errorf("save sync cursor of %d device %d: %w", c.User, c.Device, err)
	}
	return nil
}

// Cursor reads the device's cursor row; a device that never synced has zero cursors.
func (b *Mailbox) Cursor(ctx context.Context, tenant string, user int64, device uint64) (mailbox.Cursor, error) {
	t, err := b.cluster.tenant(tenant)
	if err != nil {
		return mailbox.Cursor{}, err
	}
	if device == 0 {
		return mailbox.Cursor{}, fmt.Errorf("sync cursor of %d: %w", user, errHeadDevice)
	}
	c := mailbox.Cursor{User: user, Device: device}
	row, err := t.q.SyncCursor(ctx, sqlcdb.SyncCursorParams{UserID: user, DeviceID: int64(device)})
	if errors.Is(err, sql.ErrNoRows) {
		return c, nil
	}
	if err != nil {
		return mailbox.Cursor{}, fmt.Errorf("sync cursor of %d device %d: %w", user, device, err)
	}
	c.MailboxSeq, c.DialogScore = row.MailboxSeq, row.DialogScore
	return c, nil
}
