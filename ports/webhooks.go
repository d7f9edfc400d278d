package ports

import (
	"context"
	"time"

	"github.com/imdhq/imd/core/domain/webhook"
)

// WebhookEndpoints keeps a tenant's webhook endpoints (docs/DESIGN.md issue-32, part 2) in
// the tenant database, secrets included: the deliverer signs with them.
type WebhookEndpoints interface {
	// CreateEndpoint stores e, its ID and times set by the caller.
	CreateEndpoint(ctx context.Context, tenant string, e webhook.Endpoint) error
	// Endpoint fails with webhook.ErrNotFound for an unknown id.
	Endpoint(ctx context.Context, tenant string, id int64) (webhook.Endpoint, error)
	// Endpoints lists every endpoint of the tenant by id.
	Endpoints(ctx context.Context, tenant string) ([]webhook.Endpoint, error)
	// UpdateEndpoint replaces URL, description, events, enabled and UpdatedAt of the endpoint
	// e.ID, never its secret, so a settings change racing a rotation cannot bring an old secret
	// back; webhook.ErrNotFound for an unknown id.
	UpdateEndpoint(ctx context.Context, tenant string, e webhook.Endpoint) error
	// SetSecret replaces the endpoint's secret and UpdatedAt (a rotation); webhook.ErrNotFound
	// for an unknown id.
	SetSecret(ctx context.Context, tenant string, id int64, secret string, at time.Time) error
	// DeleteEndpoint removes it; webhook.ErrNotFound for an unknown id.
	DeleteEndpoint(ctx context.Context, tenant string, id int64) error
}

// WebhookCursors keeps where each endpoint's delivery stands (docs/DESIGN.md issue-32 part 2
// "Backlog from MySQL"): a scan mark over the route mirror, the last seq delivered per topic,
// and the dead letters.
type WebhookCursors interface {
	// ScanMark is where the endpoint's passes stand; found=false before its first pass.
	ScanMark(ctx context.Context, tenant string, endpoint int64) (s webhook.Scan, found bool, err error)
	// SetScanMark moves the mark, keeping the replay point.
	SetScanMark(ctx context.Context, tenant string, endpoint int64, at time.Time) error
	// Replay drops the endpoint's topic cursors and sets both mark and replay point to point,
	// so its events from then are delivered again.
	Replay(ctx context.Context, tenant string, endpoint int64, point time.Time) error
	// Forget removes all of the endpoint's progress and dead letters (the endpoint is gone).
	Forget(ctx context.Context, tenant string, endpoint int64) error
	// TopicCursor is the last seq of topic the endpoint is done with; found=false when none.
	TopicCursor(ctx context.Context, tenant string, endpoint int64, topic string) (seq int64, found bool, err error)
	SetTopicCursor(ctx context.Context, tenant string, endpoint int64, topic string, seq int64) error
	AddDeadLetter(ctx context.Context, tenant string, d webhook.DeadLetter) error
	// DeadLetters lists the endpoint's dead letters, oldest first, at most limit.
	DeadLetters(ctx context.Context, tenant string, endpoint int64, limit int) ([]webhook.DeadLetter, error)
}

// WebhookRevisions reads the edits and recalls of a tenant's messages in the order they were
// recorded (docs/DESIGN.md issue-32 part 2 "Edits and recalls").
type WebhookRevisions interface {
	// RevisionsAfter lists at most limit records with id > after, made at or after from and
	// before until, by id.
	RevisionsAfter(ctx context.Context, tenant string, after int64, from, until time.Time, limit int) ([]webhook.Revision, error)
	// FirstRevision is the smallest id of the revisions made at or after from and before
	// until, found false when there is none, at the cost of that window's records only: where a
	// read with no cursor yet starts (docs/DESIGN.md issue-32 part 2). A store that keeps other
	// revisions than edits and recalls may count them: the read after it passes them over.
	FirstRevision(ctx context.Context, tenant string, from, until time.Time) (id int64, found bool, err error)
}

// WebhookSender posts one signed webhook request.
type WebhookSender interface {
	// Post sends body to url with headers and returns the answer's status; err is a request
	// that got no answer (refused, timed out).
	Post(ctx context.Context, url string, headers map[string]string, body []byte) (status int, err error)
}

// WebhookEvents reads the member, friendship and report events of a tenant in the order they
// were recorded (docs/DESIGN.md issue-32 part 2 "Member, friendship and report events"). The
// stores of those changes (Directory, Groups, Friends, Reports) write each record in the
// change's own transaction, only for what the change did: a user added who was a member
// already, a friendship made twice or a repeated report records nothing.
type WebhookEvents interface {
	// EventsAfter lists at most limit records with id > after, made at or after from and
	// before until, by id.
	EventsAfter(ctx context.Context, tenant string, after int64, from, until time.Time, limit int) ([]webhook.Record, error)
	// FirstEvent is the smallest id of the records made at or after from and before until,
	// found false when there is none, at the cost of that window's records only: where a
	// read with no cursor yet starts (docs/DESIGN.md issue-32 part 2).
	FirstEvent(ctx context.Context, tenant string, from, until time.Time) (id int64, found bool, err error)
	// DeleteEventsBefore deletes at most limit records made before before with an id below
	// below, oldest first, and says how many it deleted: below is the first record an endpoint
	// has not passed yet, kept with everything after it (docs/DESIGN.md issue-32 part 2).
	DeleteEventsBefore(ctx context.Context, tenant string, before time.Time, below int64, limit int) (int, error)
}
