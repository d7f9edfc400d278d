// Package webhooks manages a tenant's event webhook endpoints for the admin API
// (docs/DESIGN.md issue-32 part 2 "Endpoints"): a secret is made by the server and shown once.
package webhooks

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/bot"
	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/webhook"
	"github.com/imdhq/imd/ports"
)

// secretPrefix marks a webhook secret in logs and config files, so a leaked one is recognised.
const secretPrefix = "whsec_"

// Deps are the ports the service uses.
type Deps struct {
	Store   ports.WebhookEndpoints
	Cursors ports.WebhookCursors
	Locks   ports.Locks
	Bots    ports.Bots
	IDs     ports.IDGenerator
	Clock   ports.Clock
	// ReplayWait is how long a replay waits for a running delivery pass to release the lease
	// before it answers 50301 (DefaultReplayWait in production).
	ReplayWait time.Duration
}

// DefaultReplayWait outlasts a usual delivery pass (one request per due topic, each bounded by
// webhooks.timeout), so an operator's replay seldom meets a pass it cannot wait out.
const DefaultReplayWait = 10 * time.Second

// replayPoll is how often a waiting replay tries the lease again.
const replayPoll = 50 * time.Millisecond

// MaxDeadLetters bounds a page of dead letters.
const MaxDeadLetters = 100

// Service creates, reads, changes and removes endpoints.
type Service struct{ d Deps }

// New returns the service.
func New(d Deps) *Service { return &Service{d: d} }

// Settings are what an operator sets on an endpoint.
type Settings struct {
	URL         string
	Description string
	Events      []webhook.EventType
	Enabled     bool
	BotID       int64
}

// Create stores a new endpoint with a fresh secret and returns it, secret included: the only
// answer that carries it.
func (s *Service) Create(ctx context.Context, tenant string, set Settings) (webhook.Endpoint, error) {
	id, err := s.d.IDs.NextID()
	if err != nil {
		return webhook.Endpoint{}, apperr.Wrap(apperr.Busy, "id generation failed", err)
	}
	secret, err := newSecret()
	if err != nil {
		return webhook.Endpoint{}, err
	}
	now := s.d.Clock.Now().UTC()
	e := webhook.Endpoint{ID: id, URL: set.URL, Description: set.Description, Events: set.Events, Enabled: set.Enabled,
		BotID: set.BotID, Secret: secret, CreatedAt: now, UpdatedAt: now}
	if err := s.validate(ctx, tenant, e); err != nil {
		return webhook.Endpoint{}, err
	}
	if err := s.d.Store.CreateEndpoint(ctx, tenant, e); err != nil {
		return webhook.Endpoint{}, apperr.Wrap(apperr.Busy, "webhook store unavailable", err)
	}
	return e, nil
}

// Get reads an endpoint, secret included: the caller decides what to show.
func (s *Service) Get(ctx context.Context, tenant string, id int64) (webhook.Endpoint, error) {
	e, err := s.d.Store.Endpoint(ctx, tenant, id)
	return e, storeErr(err)
}

// List reads every endpoint of the tenant.
func (s *Service) List(ctx context.Context, tenant string) ([]webhook.Endpoint, error) {
	es, err := s.d.Store.Endpoints(ctx, tenant)
	return es, storeErr(err)
}

// Update replaces the settings of endpoint id; the store never writes its secret (only
// RotateSecret does), so an update racing a rotation keeps the rotated one. Two operators
// changing one endpoint at once: the later write wins whole, which a settings form expects.
func (s *Service) Update(ctx context.Context, tenant string, id int64, set Settings) (webhook.Endpoint, error) {
	e, err := s.d.Store.Endpoint(ctx, tenant, id)
	if err != nil {
		return webhook.Endpoint{}, storeErr(err)
	}
	e.URL, e.Description, e.Events, e.Enabled, e.BotID = set.URL, set.Description, set.Events, set.Enabled, set.BotID
	if err := s.validate(ctx, tenant, e); err != nil {
		return webhook.Endpoint{}, err
	}
	e.UpdatedAt = s.d.Clock.Now().UTC()
	if err := s.d.Store.UpdateEndpoint(ctx, tenant, e); err != nil {
		return webhook.Endpoint{}, storeErr(err)
	}
	return e, nil
}

// RotateSecret gives endpoint id a fresh secret and returns the endpoint with it: the only
// other answer that carries a secret.
func (s *Service) RotateSecret(ctx context.Context, tenant string, id int64) (webhook.Endpoint, error) {
	secret, err := newSecret()
	if err != nil {
		return webhook.Endpoint{}, err
	}
	if err := s.d.Store.SetSecret(ctx, tenant, id, secret, s.d.Clock.Now().UTC()); err != nil {
		return webhook.Endpoint{}, storeErr(err)
	}
	e, err := s.d.Store.Endpoint(ctx, tenant, id)
	if err != nil {
		return webhook.Endpoint{}, storeErr(err)
	}
	// Answered with the secret made here, whatever a later rotation wrote meanwhile.
	e.Secret = secret
	return e, nil
}

// DeadLetters lists the first limit events given up on for endpoint id, oldest first.
func (s *Service) DeadLetters(ctx context.Context, tenant string, id int64, limit int) ([]webhook.DeadLetter, error) {
	if _, err := s.d.Store.Endpoint(ctx, tenant, id); err != nil {
		return nil, storeErr(err)
	}
	ds, err := s.d.Cursors.DeadLetters(ctx, tenant, id, limit)
	return ds, storeErr(err)
}

// replayLease is how long a replay may hold the delivery lease: two small writes.
const replayLease = 30 * time.Second

// Replay delivers endpoint id's events again from point on, each topic in order from its
// first message at or after point (docs/DESIGN.md issue-32 part 2 "Replay from a point").
// It holds the tenant's delivery lease while it resets the cursors, so no pass writes a cursor
// over the reset; it waits up to ReplayWait for a running pass, then answers 50301, to be
// tried again.
func (s *Service) Replay(ctx context.Context, tenant string, id int64, point time.Time) error {
	if _, err := s.d.Store.Endpoint(ctx, tenant, id); err != nil {
		return storeErr(err)
	}
	if !month.Of(point).Valid() {
		return apperr.New(apperr.InvalidArgument, "since must be a Unix ms time in a month imd keeps (from the year 2000)")
	}
	if point.After(s.d.Clock.Now()) {
		return apperr.New(apperr.InvalidArgument, "since must not be in the future")
	}
	token, err := s.replayLease(ctx, tenant)
	if err != nil {
		return err
	}
	defer func() {
		// The replay is done (or failed) either way; a failed release lapses in replayLease.
		_ = s.d.Locks.Release(context.WithoutCancel(ctx), tenant, webhook.LeaseName, token)
	}()
	return storeErr(s.d.Cursors.Replay(ctx, tenant, id, point))
}

// replayLease takes the tenant's delivery lease for a replay, waiting out a running pass for up
// to ReplayWait.
func (s *Service) replayLease(ctx context.Context, tenant string) (string, error) {
	deadline := time.NewTimer(s.d.ReplayWait)
	defer deadline.Stop()
	for {
		token, ok, err := s.d.Locks.Acquire(ctx, tenant, webhook.LeaseName, replayLease)
		if err != nil {
			return "", apperr.Wrap(apperr.Busy, "webhook lease unavailable", err)
		}
		if ok {
			return token, nil
		}
		select {
		case <-deadline.C:
			return "", apperr.New(apperr.Busy, "a delivery pass holds the tenant's webhooks; try the replay again")
		case <-ctx.Done():
			return "", apperr.Wrap(apperr.Busy, "replay ended while a delivery pass held the lease", ctx.Err())
		case <-time.After(replayPoll):
		}
	}
}

// Delete removes endpoint id, then its progress and dead letters. The loop reads progress only
// of listed endpoints, so rows a failure or a racing pass leaves behind are never used.
func (s *Service) Delete(ctx context.Context, tenant string, id int64) error {
	if err := s.d.Store.DeleteEndpoint(ctx, tenant, id); err != nil {
		return storeErr(err)
	}
	return storeErr(s.d.Cursors.Forget(ctx, tenant, id))
}

// validate checks e's fields and that the bot it is bound to is one: an endpoint bound to any
// other user would hand its conversations to whoever holds the endpoint (40001).
func (s *Service) validate(ctx context.Context, tenant string, e webhook.Endpoint) error {
	if err := e.Validate(); err != nil {
		return err
	}
	if e.BotID == 0 {
		return nil
	}
	_, err := s.d.Bots.Bot(ctx, tenant, e.BotID)
	if errors.Is(err, bot.ErrNotFound) {
		return apperr.New(apperr.InvalidArgument, "bot_id is not a bot of the tenant")
	}
	return storeErr(err)
}

// storeErr passes webhook.ErrNotFound through and answers any other store failure 50301.
func storeErr(err error) error {
	if err == nil || errors.Is(err, webhook.ErrNotFound) {
		return err
	}
	return apperr.Wrap(apperr.Busy, "webhook store unavailable", err)
}

// newSecret is 32 random bytes, hex, prefixed: as strong as the HMAC-SHA256 key can use.
func newSecret() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("webhook secret: %w", err)
	}
	return secretPrefix + hex.EncodeToString(b[:]), nil
}
