package memory

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/imdhq/imd/core/domain/webhook"
	"github.com/imdhq/imd/ports"
)

// WebhookEndpoints is the in-memory endpoint registry.
type WebhookEndpoints struct {
	mu      sync.Mutex
	tenants map[string]map[int64]webhook.Endpoint
}

var _ ports.WebhookEndpoints = (*WebhookEndpoints)(nil)

// NewWebhookEndpoints returns an empty registry.
func NewWebhookEndpoints() *WebhookEndpoints {
	return &WebhookEndpoints{tenants: make(map[string]map[int64]webhook.Endpoint)}
}

// CreateEndpoint stores a copy of e.
func (s *WebhookEndpoints) CreateEndpoint(_ context.Context, tenant string, e webhook.Endpoint) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	all := s.tenants[tenant]
	if all == nil {
		all = make(map[int64]webhook.Endpoint)
		s.tenants[tenant] = all
	}
	if _, ok := all[e.ID]; ok {
		return fmt.Errorf("create webhook endpoint %d: id taken", e.ID)
	}
	all[e.ID] = cloneEndpoint(e)
	return nil
}

// Endpoint returns a copy of the endpoint id.
func (s *WebhookEndpoints) Endpoint(_ context.Context, tenant string, id int64) (webhook.Endpoint, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.tenants[tenant][id]
	if !ok {
		return webhook.Endpoint{}, webhook.ErrNotFound
	}
	return cloneEndpoint(e), nil
}

// Endpoints lists copies by id.
func (s *WebhookEndpoints) Endpoints(_ context.Context, tenant string) ([]webhook.Endpoint, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	all := s.tenants[tenant]
	out := make([]webhook.Endpoint, 0, len(all))
	for _, id := range slices.Sorted(maps.Keys(all)) {
		out = append(out, cloneEndpoint(all[id]))
	}
	return out, nil
}

// UpdateEndpoint replaces the endpoint's settable fields, keeping CreatedAt and the secret.
func (s *WebhookEndpoints) UpdateEndpoint(_ context.Context, tenant string, e webhook.Endpoint) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.tenants[tenant][e.ID]
	if !ok {
		return webhook.ErrNotFound
	}
	e.CreatedAt, e.Secret = old.CreatedAt, old.Secret
	s.tenants[tenant][e.ID] = cloneEndpoint(e)
	return nil
}

// SetSecret replaces the endpoint's secret.
func (s *WebhookEndpoints) SetSecret(_ context.Context, tenant string, id int64, secret string, at time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.tenants[tenant][id]
	if !ok {
		return webhook.ErrNotFound
	}
	e.Secret, e.UpdatedAt = secret, at
	s.tenants[tenant][id] = e
	return nil
}

// DeleteEndpoint removes the endpoint id.
func (s *WebhookEndpoints) DeleteEndpoint(_ context.Context, tenant string, id int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.tenants[tenant][id]; !ok {
		return webhook.ErrNotFound
	}
	delete(s.tenants[tenant], id)
	return nil
}

// cloneEndpoint copies the event slice so a caller's later change cannot reach the store.
func cloneEndpoint(e webhook.Endpoint) webhook.Endpoint {
	e.Events = slices.Clone(e.Events)
	return e
}

// WebhookCursors is the in-memory delivery progress of webhook endpoints.
type WebhookCursors struct {
	mu     sync.Mutex
	marks  map[endpointKey]webhook.Scan
	topics map[topicCursorKey]int64
	dead   map[endpointKey][]webhook.DeadLetter
}

type endpointKey struct {
	tenant string
	id     int64
}

type topicCursorKey struct {
	endpointKey
	topic string
}

var _ ports.WebhookCursors = (*WebhookCursors)(nil)

// NewWebhookCursors returns empty progress.
func NewWebhookCursors() *WebhookCursors {
	return &WebhookCursors{marks: make(map[endpointKey]webhook.Scan), topics: make(map[topicCursorKey]int64),
		dead: make(map[endpointKey][]webhook.DeadLetter)}
}

// ScanMark reads the endpoint's scan mark.
func (s *WebhookCursors) ScanMark(_ context.Context, tenant string, endpoint int64) (webhook.Scan, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sc, ok := s.marks[endpointKey{tenant, endpoint}]
	return sc, ok, nil
}

// SetScanMark moves the mark.
func (s *WebhookCursors) SetScanMark(_ context.Context, tenant string, endpoint int64, at time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := endpointKey{tenant, endpoint}
	sc := s.marks[k]
	sc.Mark = at
	s.marks[k] = sc
	return nil
}

// Replay drops the endpoint's topic cursors and starts it again at point.
func (s *WebhookCursors) Replay(_ context.Context, tenant string, endpoint int64, point time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := endpointKey{tenant, endpoint}
	s.marks[k] = webhook.Scan{Mark: point, ReplayFrom: point}
	for tk := range s.topics {
		if tk.endpointKey == k {
			delete(s.topics, tk)
		}
	}
	return nil
}

// TopicCursor reads the endpoint's cursor of topic.
func (s *WebhookCursors) TopicCursor(_ context.Context, tenant string, endpoint int64, topic string) (int64, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	seq, ok := s.topics[topicCursorKey{endpointKey{tenant, endpoint}, topic}]
	return seq, ok, nil
}

// SetTopicCursor sets it.
func (s *WebhookCursors) SetTopicCursor(_ context.Context, tenant string, endpoint int64, topic string, seq int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.topics[topicCursorKey{endpointKey{tenant, endpoint}, topic}] = seq
	return nil
}

// AddDeadLetter appends d.
func (s *WebhookCursors) AddDeadLetter(_ context.Context, tenant string, d webhook.DeadLetter) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := endpointKey{tenant, d.EndpointID}
	s.dead[k] = append(s.dead[k], d)
	return nil
}

// DeadLetters lists the endpoint's dead letters, oldest first.
func (s *WebhookCursors) DeadLetters(_ context.Context, tenant string, endpoint int64, limit int) ([]webhook.DeadLetter, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	all := s.dead[endpointKey{tenant, endpoint}]
	return slices.Clone(all[:min(len(all), max(limit, 0))]), nil
}

// Forget removes the endpoint's progress and dead letters.
func (s *WebhookCursors) Forget(_ context.Context, tenant string, endpoint int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := endpointKey{tenant, endpoint}
	delete(s.marks, k)
	delete(s.dead, k)
	for tk := range s.topics {
		if tk.endpointKey == k {
			delete(s.topics, tk)
		}
	}
	return nil
}

// WebhookRevisions is an in-memory ports.WebhookRevisions: the edits and recalls Record was
// given, by id.
type WebhookRevisions struct {
	mu      sync.Mutex
	tenants map[string][]webhook.Revision
}

var _ ports.WebhookRevisions = (*WebhookRevisions)(nil)

// NewWebhookRevisions returns an empty record.
func NewWebhookRevisions() *WebhookRevisions {
	return &WebhookRevisions{tenants: make(map[string][]webhook.Revision)}
}

// Record adds r, as a change's transaction writes im_message_revisions.
func (s *WebhookRevisions) Record(tenant string, r webhook.Revision) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tenants[tenant] = append(s.tenants[tenant], r)
	slices.SortFunc(s.tenants[tenant], func(a, b webhook.Revision) int { return int(a.ID - b.ID) })
}

// RevisionsAfter lists the records after id after, made in [from, until), by id.
func (s *WebhookRevisions) RevisionsAfter(_ context.Context, tenant string, after int64, from, until time.Time, limit int) ([]webhook.Revision, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return window(s.tenants[tenant], after, from, until, limit, revisionKey), nil
}

// FirstRevision is the smallest id of the records made in [from, until).
func (s *WebhookRevisions) FirstRevision(_ context.Context, tenant string, from, until time.Time) (int64, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return first(s.tenants[tenant], from, until, revisionKey)
}

func revisionKey(r webhook.Revision) (int64, time.Time) { return r.ID, r.At }

func recordKey(r webhook.Record) (int64, time.Time) { return r.ID, r.At }

// window lists the records of a stream, kept by id, with ids above after, made in [from,
// until), at most limit.
func window[T any](records []T, after int64, from, until time.Time, limit int, key func(T) (int64, time.Time)) []T {
	var out []T
	for _, r := range records {
		id, at := key(r)
		if len(out) < limit && id > after && !at.Before(from) && at.Before(until) {
			out = append(out, r)
		}
	}
	return out
}

// first is the smallest id of the records of a stream made in [from, until), found false when
// there is none; it never fails.
func first[T any](records []T, from, until time.Time, key func(T) (int64, time.Time)) (int64, bool, error) {
	out, found := int64(0), false
	for _, r := range records {
		id, at := key(r)
		if !at.Before(from) && at.Before(until) && (!found || id < out) {
			out, found = id, true
		}
	}
	return out, found, nil
}

// WebhookEvents is an in-memory ports.WebhookEvents: the member, friendship and report events
// that the fakes' changes recorded (Directory.RecordEventsIn, Reports.RecordEventsIn) or
// Record was given, each given the next id.
type WebhookEvents struct {
	mu      sync.Mutex
	last    int64
	tenants map[string][]webhook.Record
}

var _ ports.WebhookEvents = (*WebhookEvents)(nil)

// NewWebhookEvents returns an empty record.
func NewWebhookEvents() *WebhookEvents {
	return &WebhookEvents{tenants: make(map[string][]webhook.Record)}
}

// Record adds r under the next id, as a change's transaction writes t_webhook_events, and
// returns the id.
func (s *WebhookEvents) Record(tenant string, r webhook.Record) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.last++
	r.ID = s.last
	s.tenants[tenant] = append(s.tenants[tenant], r)
	return r.ID
}

// record adds the record a change made; a nil s records nothing (a fake wired without
// webhook events).
func (s *WebhookEvents) record(tenant string, r webhook.Record) {
	if s != nil {
		s.Record(tenant, r)
	}
}

// EventsAfter lists the records after id after, made in [from, until), by id.
func (s *WebhookEvents) EventsAfter(_ context.Context, tenant string, after int64, from, until time.Time, limit int) ([]webhook.Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return window(s.tenants[tenant], after, from, until, limit, recordKey), nil
}

// FirstEvent is the smallest id of the records made in [from, until).
func (s *WebhookEvents) FirstEvent(_ context.Context, tenant string, from, until time.Time) (int64, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return first(s.tenants[tenant], from, until, recordKey)
}

// DeleteEventsBefore deletes at most limit records made before before with an id below
// below, oldest first.
func (s *WebhookEvents) DeleteEventsBefore(_ context.Context, tenant string, before time.Time, below int64, limit int) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	s.tenants[tenant] = slices.DeleteFunc(s.tenants[tenant], func(r webhook.Record) bool {
		if n < limit && r.At.Before(before) && r.ID < below {
			n++
			return true
		}
		return false
	})
	return n, nil
}
