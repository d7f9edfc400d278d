package webhooks_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/memory"
	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/webhook"
	"github.com/imdhq/imd/core/usecase/webhooks"
)

const tenant = "acme"

func newService() (*webhooks.Service, *memory.WebhookCursors) {
	s, cursors, _ := newServiceWithLocks()
	return s, cursors
}

func newServiceWithLocks() (*webhooks.Service, *memory.WebhookCursors, *memory.Locks) {
	clock := memory.NewClock(time.Date(2030, 2, 3, 4, 5, 6, 0, time.UTC))
	cursors, locks := memory.NewWebhookCursors(), memory.NewLocks(clock.Now)
	return webhooks.New(webhooks.Deps{Store: memory.NewWebhookEndpoints(), Cursors: cursors, Locks: locks, IDs: memory.NewIDs(clock), Clock: clock,
		ReplayWait: 120 * time.Millisecond}), cursors, locks
}

// endpointAtSeven makes an endpoint whose cursor of grp_1 stands at seq 7, for the replays.
func endpointAtSeven(t *testing.T) (*webhooks.Service, *memory.WebhookCursors, *memory.Locks, webhook.Endpoint) {
	t.Helper()
	ctx := context.Background()
	s, cursors, locks := newServiceWithLocks()
	e, err := s.Create(ctx, tenant, valid)
	if err != nil {
		t.Fatal(err)
	}
	if err := cursors.SetTopicCursor(ctx, tenant, e.ID, "grp_1", 7); err != nil {
		t.Fatal(err)
	}
	return s, cursors, locks, e
}

// A replay waits out a delivery pass that releases the lease within ReplayWait, then resets.
func TestReplayWaitsOutARunningPass(t *testing.T) {
	ctx := context.Background()
	s, cursors, locks, e := endpointAtSeven(t)
	token, ok, err := locks.Acquire(ctx, tenant, webhook.LeaseName, time.Minute)
	if err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	released := make(chan error, 1)
	go func() {
		time.Sleep(60 * time.Millisecond)
		released <- locks.Release(ctx, tenant, webhook.LeaseName, token)
	}()
	if err := s.Replay(ctx, tenant, e.ID, time.Date(2030, 2, 1, 0, 0, 0, 0, time.UTC)); err != nil {
		t.Fatalf("Replay = %v, want it to wait out the pass", err)
	}
	if err := <-released; err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := cursors.TopicCursor(ctx, tenant, e.ID, "grp_1"); ok {
		t.Fatal("the replay did not reset the cursor")
	}
}

// A replay point outside the months imd keeps (none given, 0, before 2000) or in the future is
// 40001; a replay while a delivery pass holds the lease past ReplayWait is 50301; neither moves the cursors.
func TestReplayRefusals(t *testing.T) {
	ctx := context.Background()
	s, cursors, locks, e := endpointAtSeven(t)
	cases := []struct {
		name  string
		point time.Time
		code  apperr.Code
	}{
		{"zero", time.UnixMilli(0), apperr.InvalidArgument},
		{"before 2000", time.Date(1999, 12, 31, 23, 59, 0, 0, time.UTC), apperr.InvalidArgument},
		{"future", time.Date(2030, 2, 4, 0, 0, 0, 0, time.UTC), apperr.InvalidArgument},
		{"pass running", time.Date(2030, 2, 1, 0, 0, 0, 0, time.UTC), apperr.Busy},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.code == apperr.Busy {
				token, ok, err := locks.Acquire(ctx, tenant, webhook.LeaseName, time.Minute)
				if err != nil || !ok {
					t.Fatalf("Acquire = %v, %v", ok, err)
				}
				defer func() { _ = locks.Release(ctx, tenant, webhook.LeaseName, token) }()
			}
			if err := s.Replay(ctx, tenant, e.ID, c.point); apperr.CodeOf(err) != c.code {
				t.Fatalf("Replay = %v, want code %v", err, c.code)
			}
			if seq, ok, _ := cursors.TopicCursor(ctx, tenant, e.ID, "grp_1"); !ok || seq != 7 {
				t.Fatalf("a refused replay moved the cursor: %d, %v", seq, ok)
			}
		})
	}
}

var valid = webhooks.Settings{URL: "https://hooks.example/in", Events: []webhook.EventType{webhook.MessageCreated}, Enabled: true}

func TestCreateRefusesInvalidSettings(t *testing.T) {
	cases := []struct {
		name string
		edit func(*webhooks.Settings)
	}{
		{"relative url", func(s *webhooks.Settings) { s.URL = "/in" }},
		{"other scheme", func(s *webhooks.Settings) { s.URL = "ftp://hooks.example/in" }},
		{"no host", func(s *webhooks.Settings) { s.URL = "https:///in" }},
		{"long url", func(s *webhooks.Settings) { s.URL = "https://hooks.example/" + strings.Repeat("a", webhook.MaxURL) }},
		{"long description", func(s *webhooks.Settings) { s.Description = strings.Repeat("d", webhook.MaxDescription+1) }},
		{"no events", func(s *webhooks.Settings) { s.Events = nil }},
		{"unknown event", func(s *webhooks.Settings) { s.Events = []webhook.EventType{"message.deleted"} }},
		{"repeated event", func(s *webhooks.Settings) {
			s.Events = []webhook.EventType{webhook.MessageCreated, webhook.MessageCreated}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, _ := newService()
			set := valid
			c.edit(&set)
			_, err := s.Create(context.Background(), tenant, set)
			if apperr.CodeOf(err) != apperr.InvalidArgument {
				t.Fatalf("Create = %v, want 40001", err)
			}
			if es, _ := s.List(context.Background(), tenant); len(es) != 0 {
				t.Fatalf("a refused endpoint was stored: %+v", es)
			}
		})
	}
}

func TestSecretIsKeptAcrossUpdatesAndReplacedByRotation(t *testing.T) {
	ctx := context.Background()
	s, cursors := newService()
	e, err := s.Create(ctx, tenant, valid)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(e.Secret, "whsec_") || len(e.Secret) != len("whsec_")+64 {
		t.Fatalf("secret %q, want whsec_ and 64 hex digits", e.Secret)
	}
	other, err := s.Create(ctx, tenant, valid)
	if err != nil || other.Secret == e.Secret || other.ID == e.ID {
		t.Fatalf("second endpoint %+v, %v: id and secret must differ", other, err)
	}

	set := valid
	set.Events, set.Enabled = []webhook.EventType{webhook.ReportFiled, webhook.MemberJoined}, false
	upd, err := s.Update(ctx, tenant, e.ID, set)
	if err != nil || upd.Secret != e.Secret || upd.Enabled || !upd.Subscribed(webhook.ReportFiled) || upd.Subscribed(webhook.MessageCreated) {
		t.Fatalf("Update = %+v, %v", upd, err)
	}
	rot, err := s.RotateSecret(ctx, tenant, e.ID)
	if err != nil || rot.Secret == e.Secret || !strings.HasPrefix(rot.Secret, "whsec_") {
		t.Fatalf("RotateSecret = %+v, %v", rot, err)
	}
	if got, err := s.Get(ctx, tenant, e.ID); err != nil || got.Secret != rot.Secret || len(got.Events) != 2 {
		t.Fatalf("Get after rotation = %+v, %v", got, err)
	}

	// Deleting takes the endpoint's progress and dead letters with it.
	dl := webhook.DeadLetter{EndpointID: e.ID, Topic: "grp_1", Seq: 1, Type: webhook.MessageCreated, Attempts: 8}
	if err := cursors.AddDeadLetter(ctx, tenant, dl); err != nil {
		t.Fatal(err)
	}
	if err := s.Replay(ctx, tenant, e.ID, time.Date(2030, 2, 3, 0, 0, 0, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, tenant, e.ID); err != nil {
		t.Fatal(err)
	}
	_, marked, _ := cursors.ScanMark(ctx, tenant, e.ID)
	if left, _ := cursors.DeadLetters(ctx, tenant, e.ID, 10); marked || len(left) != 0 {
		t.Fatalf("a deleted endpoint kept its scan mark (%v) or dead letters %v", marked, left)
	}
}

func TestUnknownEndpoint(t *testing.T) {
	ctx := context.Background()
	s, _ := newService()
	cases := []struct {
		name string
		call func() error
	}{
		{"get", func() error { _, err := s.Get(ctx, tenant, 9); return err }},
		{"update", func() error { _, err := s.Update(ctx, tenant, 9, valid); return err }},
		{"rotate", func() error { _, err := s.RotateSecret(ctx, tenant, 9); return err }},
		{"delete", func() error { return s.Delete(ctx, tenant, 9) }},
		{"dead letters", func() error { _, err := s.DeadLetters(ctx, tenant, 9, 10); return err }},
		{"replay", func() error { return s.Replay(ctx, tenant, 9, time.Time{}) }},
	}
	for _, c := range cases {
		if err := c.call(); !errors.Is(err, webhook.ErrNotFound) {
			t.Errorf("%s: %v, want webhook.ErrNotFound", c.name, err)
		}
	}
}
