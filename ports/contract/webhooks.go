package contract

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/imdhq/imd/core/domain/webhook"
	"github.com/imdhq/imd/ports"
)

// WebhookEndpointsFactory returns an endpoint registry and an empty tenant.
type WebhookEndpointsFactory func(t *testing.T) (s ports.WebhookEndpoints, tenant string)

// WebhookEndpoints runs the endpoint registry contract: what is stored reads back whole,
// secret included, listed by id; updates keep the creation time; unknown ids are
// webhook.ErrNotFound.
func WebhookEndpoints(t *testing.T, newStore WebhookEndpointsFactory) {
	s, tenant := newStore(t)
	ctx := context.Background()
	at := time.Date(2030, 3, 4, 5, 6, 7, 8_000_000, time.UTC)
	a := webhook.Endpoint{ID: 7, URL: "https://hooks.example/a", Description: "crm", Events: []webhook.EventType{webhook.MessageCreated, webhook.ReportFiled},
		Enabled: true, BotID: 90, Secret: "whsec_a", CreatedAt: at, UpdatedAt: at}
	b := webhook.Endpoint{ID: 3, URL: "http://10.0.0.1:8080/b", Events: []webhook.EventType{webhook.MemberLeft}, Secret: "whsec_b", CreatedAt: at, UpdatedAt: at}
	for _, e := range []webhook.Endpoint{a, b} {
		if err := s.CreateEndpoint(ctx, tenant, e); err != nil {
			t.Fatalf("CreateEndpoint %d: %v", e.ID, err)
		}
	}
	got, err := s.Endpoint(ctx, tenant, 7)
	if err != nil || !reflect.DeepEqual(got, a) {
		t.Fatalf("Endpoint(7) = %+v, %v; want %+v", got, err, a)
	}
	list, err := s.Endpoints(ctx, tenant)
	if err != nil || !reflect.DeepEqual(list, []webhook.Endpoint{b, a}) {
		t.Fatalf("Endpoints = %+v, %v; want [b a] by id", list, err)
	}

	upd := a
	upd.URL, upd.Description, upd.Enabled, upd.Secret = "https://hooks.example/new", "", false, "whsec_c"
	upd.Events, upd.BotID = []webhook.EventType{webhook.MessageEdited}, 0
	upd.CreatedAt, upd.UpdatedAt = at.Add(time.Hour), at.Add(time.Minute)
	if err := s.UpdateEndpoint(ctx, tenant, upd); err != nil {
		t.Fatalf("UpdateEndpoint: %v", err)
	}
	want := upd
	want.CreatedAt, want.Secret = at, a.Secret // an update never writes the secret
	if got, err := s.Endpoint(ctx, tenant, 7); err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("Endpoint(7) after update = %+v, %v; want %+v", got, err, want)
	}
	rotated := at.Add(2 * time.Minute)
	if err := s.SetSecret(ctx, tenant, 7, "whsec_d", rotated); err != nil {
		t.Fatalf("SetSecret: %v", err)
	}
	want.Secret, want.UpdatedAt = "whsec_d", rotated
	if got, err := s.Endpoint(ctx, tenant, 7); err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("Endpoint(7) after rotation = %+v, %v; want %+v", got, err, want)
	}

	if err := s.DeleteEndpoint(ctx, tenant, 3); err != nil {
		t.Fatalf("DeleteEndpoint(3): %v", err)
	}
	unknown := []struct {
		name string
		call func() error
	}{
		{"read", func() error { _, err := s.Endpoint(ctx, tenant, 3); return err }},
		{"update", func() error { b.ID = 3; return s.UpdateEndpoint(ctx, tenant, b) }},
		{"delete", func() error { return s.DeleteEndpoint(ctx, tenant, 3) }},
		{"rotate", func() error { return s.SetSecret(ctx, tenant, 3, "whsec_e", at) }},
	}
	for _, u := range unknown {
		if err := u.call(); !errors.Is(err, webhook.ErrNotFound) {
			t.Errorf("%s of a deleted endpoint: %v, want webhook.ErrNotFound", u.name, err)
		}
	}
	if list, err := s.Endpoints(ctx, tenant); err != nil || len(list) != 1 || list[0].ID != 7 {
		t.Fatalf("Endpoints after delete = %+v, %v", list, err)
	}
}

// WebhookCursorsFactory returns delivery progress and an empty tenant.
type WebhookCursorsFactory func(t *testing.T) (s ports.WebhookCursors, tenant string)

// WebhookCursors runs the delivery progress contract: nothing is found before it is set, the
// last write wins, endpoints and topics are apart, dead letters list oldest first.
func WebhookCursors(t *testing.T, newStore WebhookCursorsFactory) {
	s, tenant := newStore(t)
	ctx := context.Background()
	at := time.Date(2030, 3, 4, 5, 6, 7, 8_000_000, time.UTC)
	if _, found, err := s.ScanMark(ctx, tenant, 1); err != nil || found {
		t.Fatalf("ScanMark before any = %v, %v", found, err)
	}
	if _, found, err := s.TopicCursor(ctx, tenant, 1, "grp_1"); err != nil || found {
		t.Fatalf("TopicCursor before any = %v, %v", found, err)
	}
	for _, mark := range []time.Time{at, at.Add(-time.Hour)} { // a mark may move back
		if err := s.SetScanMark(ctx, tenant, 1, mark); err != nil {
			t.Fatal(err)
		}
		if got, found, err := s.ScanMark(ctx, tenant, 1); err != nil || !found || !got.Mark.Equal(mark) || !got.ReplayFrom.IsZero() {
			t.Fatalf("ScanMark = %+v, %v, %v; want mark %v, no replay", got, found, err, mark)
		}
	}
	if _, found, _ := s.ScanMark(ctx, tenant, 2); found {
		t.Fatal("endpoint 2 has endpoint 1's scan mark")
	}

	sets := []struct {
		endpoint int64
		topic    string
		seq      int64
	}{{1, "grp_1", 3}, {1, "grp_1", 7}, {1, "grp_2", 1}, {2, "grp_1", 9}}
	for _, c := range sets {
		if err := s.SetTopicCursor(ctx, tenant, c.endpoint, c.topic, c.seq); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range sets[1:] {
		if got, found, err := s.TopicCursor(ctx, tenant, c.endpoint, c.topic); err != nil || !found || got != c.seq {
			t.Fatalf("TopicCursor(%d, %s) = %d, %v, %v; want %d", c.endpoint, c.topic, got, found, err, c.seq)
		}
	}

	// A replay drops the endpoint's cursors, not another's, and keeps its point across marks.
	point := at.Add(-24 * time.Hour)
	if err := s.Replay(ctx, tenant, 1, point); err != nil {
		t.Fatal(err)
	}
	if err := s.SetScanMark(ctx, tenant, 1, at); err != nil {
		t.Fatal(err)
	}
	if got, found, err := s.ScanMark(ctx, tenant, 1); err != nil || !found || !got.Mark.Equal(at) || !got.ReplayFrom.Equal(point) {
		t.Fatalf("ScanMark after a replay and a pass = %+v, %v, %v; want mark %v, replay from %v", got, found, err, at, point)
	}
	if _, found, err := s.TopicCursor(ctx, tenant, 1, "grp_1"); err != nil || found {
		t.Fatalf("a cursor of endpoint 1 outlived its replay: %v, %v", found, err)
	}
	if seq, found, err := s.TopicCursor(ctx, tenant, 2, "grp_1"); err != nil || !found || seq != 9 {
		t.Fatalf("endpoint 2's cursor after endpoint 1's replay = %d, %v, %v; want 9", seq, found, err)
	}

	dead := []webhook.DeadLetter{
		{EndpointID: 1, Topic: "grp_1", Seq: 4, Type: webhook.MessageCreated, Attempts: 8, LastError: "status 500", At: at},
		{EndpointID: 2, Topic: "grp_1", Seq: 5, Type: webhook.MessageCreated, Attempts: 8, LastError: "timeout", At: at},
		{EndpointID: 1, Topic: "grp_2", Seq: 1, Type: webhook.MessageCreated, Attempts: 3, LastError: "refused", At: at.Add(time.Second)},
	}
	for _, d := range dead {
		if err := s.AddDeadLetter(ctx, tenant, d); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := s.DeadLetters(ctx, tenant, 1, 10); err != nil || !reflect.DeepEqual(got, []webhook.DeadLetter{dead[0], dead[2]}) {
		t.Fatalf("DeadLetters(1) = %+v, %v", got, err)
	}
	if got, err := s.DeadLetters(ctx, tenant, 1, 1); err != nil || !reflect.DeepEqual(got, dead[:1]) {
		t.Fatalf("DeadLetters(1, limit 1) = %+v, %v", got, err)
	}

	if err := s.Forget(ctx, tenant, 1); err != nil {
		t.Fatal(err)
	}
	_, marked, _ := s.ScanMark(ctx, tenant, 1)
	_, cursor, _ := s.TopicCursor(ctx, tenant, 1, "grp_2")
	left, _ := s.DeadLetters(ctx, tenant, 1, 10)
	if marked || cursor || len(left) != 0 {
		t.Fatalf("endpoint 1 forgotten still has a mark %v, a cursor %v, dead letters %v", marked, cursor, left)
	}
	if got, err := s.DeadLetters(ctx, tenant, 2, 10); err != nil || len(got) != 1 {
		t.Fatalf("endpoint 2's dead letters after endpoint 1 was forgotten = %+v, %v", got, err)
	}
}
