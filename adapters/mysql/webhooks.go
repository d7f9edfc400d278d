package mysql

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/imdhq/imd/adapters/mysql/sqlcdb"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/webhook"
	"github.com/imdhq/imd/ports"
)

// WebhookEndpoints implements ports.WebhookEndpoints over t_webhook_endpoints.
type WebhookEndpoints struct{ cluster *Cluster }

var _ ports.WebhookEndpoints = (*WebhookEndpoints)(nil)

// NewWebhookEndpoints returns the endpoint registry of the provisioned tenants of c.
func NewWebhookEndpoints(c *Cluster) *WebhookEndpoints { return &WebhookEndpoints{cluster: c} }

// CreateEndpoint inserts e.
func (s *WebhookEndpoints) CreateEndpoint(ctx context.Context, tenant string, e webhook.Endpoint) error {
	t, events, err := s.row(tenant, e)
	if err != nil {
		return err
	}
	err = t.q.InsertWebhookEndpoint(ctx, sqlcdb.InsertWebhookEndpointParams{
		ID: e.ID, Url: e.URL, Description: e.Description, Events: events, Enabled: e.Enabled, BotID: e.BotID, Secret: e.Secret,
		CreatedAt: e.CreatedAt.UTC().Truncate(time.Millisecond), UpdatedAt: e.UpdatedAt.UTC().Truncate(time.Millisecond),
	})
	if err != nil {
		return fmt.Errorf("create webhook endpoint %d: %w", e.ID, err)
	}
	return nil
}

// Endpoint reads the endpoint id.
func (s *WebhookEndpoints) Endpoint(ctx context.Context, tenant string, id int64) (webhook.Endpoint, error) {
	t, err := s.cluster.tenant(tenant)
	if err != nil {
		return webhook.Endpoint{}, err
	}
	row, err := t.q.WebhookEndpoint(ctx, id)
	if errors.Is(err, sql.ErrNoRows) {
		return webhook.Endpoint{}, webhook.ErrNotFound
	}
	if err != nil {
		return webhook.Endpoint{}, fmt.Errorf("read webhook endpoint %d: %w", id, err)
	}
	return endpointOf(row)
}

// Endpoints lists the tenant's endpoints by id.
func (s *WebhookEndpoints) Endpoints(ctx context.Context, tenant string) ([]webhook.Endpoint, error) {
	t, err := s.cluster.tenant(tenant)
	if err != nil {
		return nil, err
	}
	rows, err := t.q.WebhookEndpoints(ctx)
	if err != nil {
		return nil, fmt.Errorf("list webhook endpoints: %w", err)
	}
	out := make([]webhook.Endpoint, len(rows))
	for i, r := range rows {
		if out[i], err = endpointOf(r); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// UpdateEndpoint rewrites the settable columns of e.ID, the secret not among them.
func (s *WebhookEndpoints) UpdateEndpoint(ctx context.Context, tenant string, e webhook.Endpoint) error {
	t, events, err := s.row(tenant, e)
	if err != nil {
		return err
	}
	n, err := t.q.UpdateWebhookEndpoint(ctx, sqlcdb.UpdateWebhookEndpointParams{
		ID: e.ID, Url: e.URL, Description: e.Description, Events: events, Enabled: e.Enabled, BotID: e.BotID,
		UpdatedAt: e.UpdatedAt.UTC().Truncate(time.Millisecond),
	})
	if err != nil {
		return fmt.Errorf("update webhook endpoint %d: %w", e.ID, err)
	}
	return s.matched(ctx, tenant, e.ID, n)
}

// SetSecret writes a rotated secret.
func (s *WebhookEndpoints) SetSecret(ctx context.Context, tenant string, id int64, secret string, at time.Time) error {
	t, err := s.cluster.tenant(tenant)
	if err != nil {
		return err
	}
	n, err := t.q.SetWebhookSecret(ctx, sqlcdb.SetWebhookSecretParams{ID: id, Secret: secret, UpdatedAt: at.UTC().Truncate(time.Millisecond)})
	if err != nil {
		return fmt.Errorf("rotate the secret of webhook endpoint %d: %w", id, err)
	}
	return s.matched(ctx, tenant, id, n)
}

// matched turns an update that changed no row into webhook.ErrNotFound when the endpoint is
// gone: affected rows count changed rows only, so an update to the same values still matched.
func (s *WebhookEndpoints) matched(ctx context.Context, tenant string, id int64, changed int64) error {
	if changed > 0 {
		return nil
	}
	_, err := s.Endpoint(ctx, tenant, id)
	return err
}

// DeleteEndpoint removes the endpoint id.
func (s *WebhookEndpoints) DeleteEndpoint(ctx context.Context, tenant string, id int64) error {
	t, err := s.cluster.tenant(tenant)
	if err != nil {
		return err
	}
	n, err := t.q.DeleteWebhookEndpoint(ctx, id)
	if err != nil {
		return fmt.Errorf("delete webhook endpoint %d: %w", id, err)
	}
	if n == 0 {
		return webhook.ErrNotFound
	}
	return nil
}

// row is the tenant's database and e's events column, what a write of e needs.
func (s *WebhookEndpoints) row(tenant string, e webhook.Endpoint) (*tenantDB, string, error) {
	t, err := s.cluster.tenant(tenant)
	if err != nil {
		return nil, "", err
	}
	b, err := json.Marshal(e.Events)
	if err != nil {
		return nil, "", fmt.Errorf("encode events of webhook endpoint %d: %w", e.ID, err)
	}
	return t, string(b), nil
}

func endpointOf(r sqlcdb.TWebhookEndpoint) (webhook.Endpoint, error) {
	var events []webhook.EventType
	if err := json.Unmarshal([]byte(r.Events), &events); err != nil {
		return webhook.Endpoint{}, fmt.Errorf("decode events of webhook endpoint %d: %w", r.ID, err)
	}
	return webhook.Endpoint{
		ID: r.ID, URL: r.Url, Description: r.Description, Events: events, Enabled: r.Enabled, BotID: r.BotID, Secret: r.Secret,
		CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(),
	}, nil
}

// WebhookCursors implements ports.WebhookCursors over the tables of 0014.
type WebhookCursors struct{ cluster *Cluster }

var _ ports.WebhookCursors = (*WebhookCursors)(nil)

// NewWebhookCursors returns the delivery progress of the provisioned tenants of c.
func NewWebhookCursors(c *Cluster) *WebhookCursors { return &WebhookCursors{cluster: c} }

// maxDeadLetterError is t_webhook_dead_letters.last_error's size in characters.
const maxDeadLetterError = 512

// ScanMark reads the endpoint's scan mark.
func (s *WebhookCursors) ScanMark(ctx context.Context, tenant string, endpoint int64) (webhook.Scan, bool, error) {
	t, err := s.cluster.tenant(tenant)
	if err != nil {
		return webhook.Scan{}, false, err
	}
	row, err := t.q.WebhookScanMark(ctx, endpoint)
	if errors.Is(err, sql.ErrNoRows) {
		return webhook.Scan{}, false, nil
	}
	if err != nil {
		return webhook.Scan{}, false, fmt.Errorf("read scan mark of webhook endpoint %d: %w", endpoint, err)
	}
	sc := webhook.Scan{Mark: row.ScannedTo.UTC()}
	if row.ReplayFrom.Valid {
		sc.ReplayFrom = row.ReplayFrom.Time.UTC()
	}
	return sc, true, nil
}

// Replay drops the endpoint's topic cursors, then sets mark and replay point: a pass between
// the two statements starts its topics over from the old point, which only delivers more.
func (s *WebhookCursors) Replay(ctx context.Context, tenant string, endpoint int64, point time.Time) error {
	t, err := s.cluster.tenant(tenant)
	if err != nil {
		return err
	}
	if err := t.q.DeleteWebhookTopicCursors(ctx, endpoint); err != nil {
		return fmt.Errorf("drop cursors of webhook endpoint %d: %w", endpoint, err)
	}
	point = point.UTC().Truncate(time.Millisecond)
	err = t.q.ReplayWebhookScanMark(ctx, sqlcdb.ReplayWebhookScanMarkParams{EndpointID: endpoint, ScannedTo: point,
		ReplayFrom: sql.NullTime{Time: point, Valid: true}})
	if err != nil {
		return fmt.Errorf("replay webhook endpoint %d: %w", endpoint, err)
	}
	return nil
}

// SetScanMark writes it.
func (s *WebhookCursors) SetScanMark(ctx context.Context, tenant string, endpoint int64, at time.Time) error {
	t, err := s.cluster.tenant(tenant)
	if err != nil {
		return err
	}
	err = t.q.SetWebhookScanMark(ctx, sqlcdb.SetWebhookScanMarkParams{EndpointID: endpoint, ScannedTo: at.UTC().Truncate(time.Millisecond)})
	if err != nil {
		return fmt.Errorf("set scan mark of webhook endpoint %d: %w", endpoint, err)
	}
	return nil
}

// TopicCursor reads the endpoint's cursor of topic.
func (s *WebhookCursors) TopicCursor(ctx context.Context, tenant string, endpoint int64, topic string) (int64, bool, error) {
	t, err := s.cluster.tenant(tenant)
	if err != nil {
		return 0, false, err
	}
	seq, err := t.q.WebhookTopicCursor(ctx, sqlcdb.WebhookTopicCursorParams{EndpointID: endpoint, Topic: topic})
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("read cursor of webhook endpoint %d on %s: %w", endpoint, topic, err)
	}
	return seq, true, nil
}

// SetTopicCursor writes it.
func (s *WebhookCursors) SetTopicCursor(ctx context.Context, tenant string, endpoint int64, topic string, seq int64) error {
	t, err := s.cluster.tenant(tenant)
	if err != nil {
		return err
	}
	if err := t.q.SetWebhookTopicCursor(ctx, sqlcdb.SetWebhookTopicCursorParams{EndpointID: endpoint, Topic: topic, Seqid: seq}); err != nil {
		return fmt.Errorf("set cursor of webhook endpoint %d on %s: %w", endpoint, topic, err)
	}
	return nil
}

// AddDeadLetter inserts d, its error cut to the column.
func (s *WebhookCursors) AddDeadLetter(ctx context.Context, tenant string, d webhook.DeadLetter) error {
	t, err := s.cluster.tenant(tenant)
	if err != nil {
		return err
	}
	last := []rune(d.LastError)
	err = t.q.InsertWebhookDeadLetter(ctx, sqlcdb.InsertWebhookDeadLetterParams{
		EndpointID: d.EndpointID, Topic: d.Topic, Seqid: d.Seq, EventType: string(d.Type),
		Attempts: int32(min(d.Attempts, math.MaxInt32)), LastError: string(last[:min(len(last), maxDeadLetterError)]),
		CreatedAt: d.At.UTC().Truncate(time.Millisecond),
	})
	if err != nil {
		return fmt.Errorf("dead letter of webhook endpoint %d, %s seq %d: %w", d.EndpointID, d.Topic, d.Seq, err)
	}
	return nil
}

// DeadLetters lists the endpoint's dead letters, oldest first.
func (s *WebhookCursors) DeadLetters(ctx context.Context, tenant string, endpoint int64, limit int) ([]webhook.DeadLetter, error) {
	t, err := s.cluster.tenant(tenant)
	if err != nil {
		return nil, err
	}
	lim, err := limit32(limit)
	if err != nil {
		return nil, err
	}
	rows, err := t.q.WebhookDeadLetters(ctx, sqlcdb.WebhookDeadLettersParams{EndpointID: endpoint, Limit: lim})
	if err != nil {
		return nil, fmt.Errorf("list dead letters of webhook endpoint %d: %w", endpoint, err)
	}
	out := make([]webhook.DeadLetter, len(rows))
	for i, r := range rows {
		out[i] = webhook.DeadLetter{EndpointID: r.EndpointID, Topic: r.Topic, Seq: r.Seqid, Type: webhook.EventType(r.EventType),
			Attempts: int(r.Attempts), LastError: r.LastError, At: r.CreatedAt.UTC()}
	}
	return out, nil
}

// Forget deletes the endpoint's rows of 0014, one table at a time: what a failure leaves is
// removed by the next call, and rows of an endpoint that no longer exists are never read.
func (s *WebhookCursors) Forget(ctx context.Context, tenant string, endpoint int64) error {
	t, err := s.cluster.tenant(tenant)
	if err != nil {
		return err
	}
	for _, del := range []func(context.Context, int64) error{t.q.DeleteWebhookTopicCursors, t.q.DeleteWebhookScanMark, t.q.DeleteWebhookDeadLetters} {
		if err := del(ctx, endpoint); err != nil {
			return fmt.Errorf("forget webhook endpoint %d: %w", endpoint, err)
		}
	}
	return nil
}

// WebhookRevisions implements ports.WebhookRevisions over im_message_revisions.
type WebhookRevisions struct{ cluster *Cluster }

var _ ports.WebhookRevisions = (*WebhookRevisions)(nil)

// NewWebhookRevisions returns the revision reader of the provisioned tenants of c.
func NewWebhookRevisions(c *Cluster) *WebhookRevisions { return &WebhookRevisions{cluster: c} }

// RevisionsAfter reads the edits and recalls after id after, made in [from, until).
func (s *WebhookRevisions) RevisionsAfter(ctx context.Context, tenant string, after int64, from, until time.Time, limit int) ([]webhook.Revision, error) {
	return recordsAfter(ctx, s.cluster, tenant, "revisions", after, limit, func(q *sqlcdb.Queries, lim int32) ([]sqlcdb.WebhookRevisionsRow, error) {
		return q.WebhookRevisions(ctx, sqlcdb.WebhookRevisionsParams{ID: after, CreatedAt: from.UTC(), CreatedAt_2: until.UTC(), Limit: lim})
	}, func(r sqlcdb.WebhookRevisionsRow) webhook.Revision {
		rev := webhook.Revision{ID: r.ID, Topic: r.Topic, Seq: r.Seqid, MsgID: r.MessageID, Version: int(r.Version), Editor: r.Editor,
			Recall: r.Action == string(message.ActionRecall), At: r.CreatedAt.UTC()}
		if r.NewContent.Valid {
			rev.Content = json.RawMessage(r.NewContent.String)
		}
		return rev
	})
}

// FirstRevision is the smallest id of the revisions made in [from, until), deletes included: a
// range of idx_created (0016), whose entries carry the id but not the action (docs/DESIGN.md
// issue-32 part 2).
func (s *WebhookRevisions) FirstRevision(ctx context.Context, tenant string, from, until time.Time) (int64, bool, error) {
	return firstRecord(ctx, s.cluster, tenant, "revision", from, func(q *sqlcdb.Queries) (int64, error) {
		return q.FirstWebhookRevision(ctx, sqlcdb.FirstWebhookRevisionParams{CreatedAt: from.UTC(), CreatedAt_2: until.UTC()})
	})
}

// recordsAfter reads a page of a recorded stream of tenant (the revisions, the events) with
// read and converts its rows.
func recordsAfter[R, T any](ctx context.Context, c *Cluster, tenant, what string, after int64, limit int,
	read func(*sqlcdb.Queries, int32) ([]R, error), conv func(R) T) ([]T, error) {
	t, err := c.tenant(tenant)
	if err != nil {
		return nil, err
	}
	lim, err := limit32(limit)
	if err != nil {
		return nil, err
	}
	rows, err := read(t.q, lim)
	if err != nil {
		return nil, fmt.Errorf("read %s after %d: %w", what, after, err)
	}
	out := make([]T, len(rows))
	for i, r := range rows {
		out[i] = conv(r)
	}
	return out, nil
}

// recordEvent writes a member, friendship or report event into t_webhook_events through q,
// the transaction of its change (docs/DESIGN.md issue-32 part 2 "Member, friendship and report
// events").
func recordEvent(ctx context.Context, q *sqlcdb.Queries, r webhook.Record) error {
	return q.InsertWebhookEvent(ctx, sqlcdb.InsertWebhookEventParams{Type: string(r.Type), Topic: r.Topic, Data: r.Data, CreatedAt: r.At.UTC()})
}

// WebhookEvents implements ports.WebhookEvents over t_webhook_events.
type WebhookEvents struct{ cluster *Cluster }

var _ ports.WebhookEvents = (*WebhookEvents)(nil)

// NewWebhookEvents returns the event reader of the provisioned tenants of c.
func NewWebhookEvents(c *Cluster) *WebhookEvents { return &WebhookEvents{cluster: c} }

// EventsAfter reads the recorded events after id after, made in [from, until).
func (s *WebhookEvents) EventsAfter(ctx context.Context, tenant string, after int64, from, until time.Time, limit int) ([]webhook.Record, error) {
	return recordsAfter(ctx, s.cluster, tenant, "webhook events", after, limit, func(q *sqlcdb.Queries, lim int32) ([]sqlcdb.TWebhookEvent, error) {
		return q.WebhookEvents(ctx, sqlcdb.WebhookEventsParams{ID: after, CreatedAt: from.UTC(), CreatedAt_2: until.UTC(), Limit: lim})
	}, func(r sqlcdb.TWebhookEvent) webhook.Record {
		return webhook.Record{ID: r.ID, Type: webhook.EventType(r.Type), Topic: r.Topic, Data: json.RawMessage(r.Data), At: r.CreatedAt.UTC()}
	})
}

// FirstEvent is the smallest id of the records made in [from, until): a range of idx_created,
// whose entries carry the id (docs/DESIGN.md issue-32 part 2).
func (s *WebhookEvents) FirstEvent(ctx context.Context, tenant string, from, until time.Time) (int64, bool, error) {
	return firstRecord(ctx, s.cluster, tenant, "webhook event", from, func(q *sqlcdb.Queries) (int64, error) {
		return q.FirstWebhookEvent(ctx, sqlcdb.FirstWebhookEventParams{CreatedAt: from.UTC(), CreatedAt_2: until.UTC()})
	})
}

// firstRecord reads with first the smallest id of a recorded stream of tenant made in a window
// from from: the query's 0 is none, as ids start at 1.
func firstRecord(ctx context.Context, c *Cluster, tenant, what string, from time.Time, first func(*sqlcdb.Queries) (int64, error)) (int64, bool, error) {
	t, err := c.tenant(tenant)
	if err != nil {
		return 0, false, err
	}
	id, err := first(t.q)
	if err != nil {
		return 0, false, fmt.Errorf("first %s made from %s: %w", what, from.UTC().Format(time.RFC3339), err)
	}
	return id, id > 0, nil
}

// DeleteEventsBefore deletes a batch of the records made before before with an id below
// below, oldest first.
func (s *WebhookEvents) DeleteEventsBefore(ctx context.Context, tenant string, before time.Time, below int64, limit int) (int, error) {
	t, err := s.cluster.tenant(tenant)
	if err != nil {
		return 0, err
	}
	lim, err := limit32(limit)
	if err != nil {
		return 0, err
	}
	n, err := t.q.DeleteWebhookEventsBefore(ctx, sqlcdb.DeleteWebhookEventsBeforeParams{CreatedAt: before.UTC(), ID: below, Limit: lim})
	if err != nil {
		return 0, fmt.Errorf("delete webhook events before %s below id %d: %w", before.UTC().Format(time.RFC3339), below, err)
	}
	return int(n), nil
}
