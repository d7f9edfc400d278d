package uploads_test

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/memory"
	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/objectkey"
	"github.com/imdhq/imd/core/domain/social"
	"github.com/imdhq/imd/core/store/membership"
	"github.com/imdhq/imd/core/usecase/conversation"
	"github.com/imdhq/imd/core/usecase/uploads"
	"github.com/imdhq/imd/ports"
)

// signer records what it was asked to sign.
type signer struct {
	*memory.ObjectStore
	key, contentType string
	size             int64
	expires          time.Time
}

func (s *signer) PresignPut(_ context.Context, key, contentType string, size int64, expires time.Time) (string, error) {
	s.key, s.contentType, s.size, s.expires = key, contentType, size, expires
	return "https://store/" + key + "?put", nil
}

func (s *signer) PresignGet(_ context.Context, key string, _ time.Time) (string, error) {
	return "https://store/" + key + "?get", nil
}

func TestUpload(t *testing.T) {
	now := time.Date(2030, 4, 5, 6, 7, 8, 0, time.UTC)
	tests := []struct {
		name string
		req  uploads.Request
		want apperr.Code
	}{
		{"image", uploads.Request{Tenant: "acme", User: 7, ContentType: "image/png", Size: 1000}, apperr.OK},
		{"file", uploads.Request{Tenant: "acme", User: 7, ContentType: "application/pdf", Size: 10}, apperr.OK},
		{"html is refused", uploads.Request{Tenant: "acme", User: 7, ContentType: "text/html", Size: 10}, apperr.InvalidArgument},
		{"svg is refused", uploads.Request{Tenant: "acme", User: 7, ContentType: "image/svg+xml", Size: 10}, apperr.InvalidArgument},
		{"empty", uploads.Request{Tenant: "acme", User: 7, ContentType: "image/png"}, apperr.InvalidArgument},
		{"too large", uploads.Request{Tenant: "acme", User: 7, ContentType: "image/png", Size: 2001}, apperr.TooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sig := &signer{ObjectStore: memory.NewObjectStore()}
			svc := uploads.New(uploads.Config{MaxSize: 2000, URLTTL: time.Minute}, uploads.Deps{Store: sig, Clock: memory.NewClock(now)})
			g, err := svc.Upload(context.Background(), tt.req)
			if got := apperr.CodeOf(err); got != tt.want {
				t.Fatalf("Upload = %+v, %v; want code %d", g, err, tt.want)
			}
			if err != nil {
				return
			}
			if !objectkey.Valid(g.Key) || !strings.HasPrefix(g.Key, "acme/7/20300405/") || objectkey.Tenant(g.Key) != "acme" {
				t.Fatalf("key %q", g.Key)
			}
			if ct, ok := objectkey.ContentType(g.Key); !ok || ct != tt.req.ContentType {
				t.Fatalf("key %q maps back to %q, %v", g.Key, ct, ok)
			}
			if sig.key != g.Key || sig.contentType != tt.req.ContentType || sig.size != tt.req.Size || !sig.expires.Equal(now.Add(time.Minute)) {
				t.Fatalf("signed %+v", sig)
			}
		})
	}
}

// rights is a tenant "acme" with users 1-4, user 1's key sent in group 7 (members 1 and 2),
// user 4's key as its avatar, and the uploads service over it.
type rights struct {
	svc                    *uploads.Service
	refs                   *memory.References
	store                  *memory.ObjectStore
	metrics                *memory.Metrics
	sent, avatar, unshared string
}

func newRights(t *testing.T) rights {
	t.Helper()
	ctx := context.Background()
	clock := memory.NewClock(time.Now())
	dir := memory.NewDirectory()
	for id := int64(1); id <= 4; id++ {
		if err := dir.CreateUser(ctx, "acme", social.User{ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := dir.CreateGroup(ctx, "acme", social.Group{ID: 7, Owner: 1}, 70, []int64{1, 2}, 0); err != nil {
		t.Fatal(err)
	}
	r := rights{
		refs:     memory.NewReferences(),
		store:    memory.NewObjectStore(),
		metrics:  memory.NewMetrics(),
		sent:     "acme/1/20300405/0123456789abcdef0123456789abcdef.png",
		avatar:   "acme/4/20300405/0123456789abcdef0123456789abcdef.png",
		unshared: "acme/1/20300405/ffffffffffffffffffffffffffffffff.pdf",
	}
	if err := dir.UpdateProfile(ctx, "acme", social.Profile{UserID: 4, Avatar: r.avatar}); err != nil {
		t.Fatal(err)
	}
	resolver := conversation.NewResolver(dir, memory.NewIDs(clock), membership.New(dir, clock, time.Minute), conversation.WithClock(clock))
	r.svc = uploads.New(uploads.Config{}, uploads.Deps{
		Store: r.store, Clock: clock, Refs: r.refs, Profiles: dir, Resolver: resolver, Imager: imager{}, Metrics: r.metrics,
	})
	if err := r.svc.AdmitMedia(ctx, "acme", 1, r.sent, "grp_7"); err != nil {
		t.Fatal(err)
	}
	return r
}

// TestDownloadRights: a key is read by its uploader, by everyone when it is its uploader's
// avatar, and by the readers of a conversation that references it; any other user of the
// tenant is refused with 40301, and what is no key of the tenant is 40401 (issue 33).
func TestDownloadRights(t *testing.T) {
	r := newRights(t)
	tests := []struct {
		name   string
		tenant string
		user   int64
		key    string
		want   apperr.Code
	}{
		{"uploader", "acme", 1, r.unshared, apperr.OK},
		{"member of a conversation it was sent in", "acme", 2, r.sent, apperr.OK},
		{"user who only learned the key", "acme", 3, r.sent, apperr.Forbidden},
		{"a member, for a key never sent", "acme", 2, r.unshared, apperr.Forbidden},
		{"anyone, for an avatar", "acme", 3, r.avatar, apperr.OK},
		{"another tenant", "other", 1, r.sent, apperr.NotFound},
		// Issue 32: a thumbnail is read by the rights of its original.
		{"member, for the thumbnail of what was sent", "acme", 2, objectkey.Thumb(r.sent, "jpg"), apperr.OK},
		{"user who only learned the thumbnail", "acme", 3, objectkey.Thumb(r.sent, "jpg"), apperr.Forbidden},
		{"a member, for the thumbnail of a key never sent", "acme", 2, objectkey.Thumb(r.unshared, "png"), apperr.Forbidden},
		{"anyone, for an avatar's thumbnail", "acme", 3, objectkey.Thumb(r.avatar, "jpg"), apperr.OK},
		{"a path", "acme", 1, "acme/1/../../secret.png", apperr.NotFound},
		{"short", "acme", 1, "acme/1/20300405/short.png", apperr.NotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, _, err := r.svc.Download(context.Background(), tt.tenant, tt.user, tt.key); apperr.CodeOf(err) != tt.want {
				t.Fatalf("Download = %v, want code %d", err, tt.want)
			}
		})
	}
}

// TestAdmitMedia: a key enters a conversation only for a sender who may read it, and then its
// readers may read it too; a refused key records nothing (issue 33).
func TestAdmitMedia(t *testing.T) {
	ctx := context.Background()
	r := newRights(t)
	tests := []struct {
		name  string
		user  int64
		key   string
		topic string
		want  apperr.Code
	}{
		{"own upload", 1, r.unshared, "grp_7", apperr.OK},
		{"forwarding what a conversation showed", 2, r.sent, "p2p_2_3", apperr.OK},
		{"a learned key", 3, "acme/2/20300405/0123456789abcdef0123456789abcdef.png", "p2p_1_3", apperr.Forbidden},
		{"a path", 1, "../../../etc/passwd", "grp_7", apperr.InvalidArgument},
		{"another tenant's key", 1, "other/1/20300405/0123456789abcdef0123456789abcdef.png", "grp_7", apperr.InvalidArgument},
		{"a thumbnail's key", 1, objectkey.Thumb(r.unshared, "jpg"), "grp_7", apperr.InvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := r.svc.AdmitMedia(ctx, "acme", tt.user, tt.key, tt.topic); apperr.CodeOf(err) != tt.want {
				t.Fatalf("AdmitMedia = %v, want code %d", err, tt.want)
			}
			topics, err := r.refs.MediaTopics(ctx, "acme", tt.key, 10)
			if err != nil {
				t.Fatal(err)
			}
			if recorded := slices.Contains(topics, tt.topic); recorded != (tt.want == apperr.OK) {
				t.Fatalf("reference to %s recorded: %v (topics %q)", tt.topic, recorded, topics)
			}
		})
	}
	if _, _, err := r.svc.Download(ctx, "acme", 3, r.sent); err != nil {
		t.Fatalf("user 3 reads what user 2 forwarded to it: %v", err)
	}
}

// TestBackfill: the reindex command records the references of messages stored before they
// were kept, so their readers may read their media; a key of another shape or tenant is not
// recorded.
func TestBackfill(t *testing.T) {
	ctx := context.Background()
	r := newRights(t)
	old := "acme/1/20300405/00000000000000000000000000000001.png"
	msgs := []message.Message{
		{Topic: "grp_7", Seq: 1, Type: "image", Content: json.RawMessage(`{"key":"` + old + `"}`)},
		{Topic: "grp_7", Seq: 2, Type: "file", Content: json.RawMessage(`{"key":"files/f1"}`)},
		{Topic: "grp_7", Seq: 3, Type: "image", Content: json.RawMessage(`{"key":"other/1/20300405/00000000000000000000000000000001.png"}`)},
		{Topic: "grp_7", Seq: 4, Type: "text", Content: json.RawMessage(`{"text":"hi"}`)},
	}
	if _, _, err := r.svc.Download(ctx, "acme", 2, old); apperr.CodeOf(err) != apperr.Forbidden {
		t.Fatalf("before the backfill: %v, want 40301", err)
	}
	if err := r.svc.Backfill(ctx, "acme", msgs); err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.svc.Download(ctx, "acme", 2, old); err != nil {
		t.Fatalf("a member after the backfill: %v", err)
	}
	for _, key := range []string{"files/f1", "other/1/20300405/00000000000000000000000000000001.png"} {
		if topics, err := r.refs.MediaTopics(ctx, "acme", key, 10); err != nil || len(topics) != 0 {
			t.Fatalf("%s recorded in %q (%v)", key, topics, err)
		}
	}
}

// imager is a ports.Imager that sniffs only its own marks: "IMG <type>" is an image of that
// type, 1200 by 800; "BOMB" too many pixels; anything else no image.
type imager struct{}

func (imager) Thumbnail(_ context.Context, data []byte, maxSide int) (ports.Thumbnail, error) {
	source, ok := strings.CutPrefix(string(data), "IMG ")
	switch {
	case string(data) == "BOMB":
		return ports.Thumbnail{}, &ports.ImageRefusal{Reason: ports.RefusedPixels, Detail: "50000x50000"}
	case !ok:
		return ports.Thumbnail{}, &ports.ImageRefusal{Reason: ports.RefusedType, Detail: "text/plain"}
	}
	return ports.Thumbnail{Data: []byte("thumb " + strconv.Itoa(maxSide)), ContentType: "image/jpeg", Ext: "jpg", Source: source, Width: 1200, Height: 800}, nil
}

// TestComplete: the uploader's confirmed image gets its thumbnail beside it and its
// dimensions; other media complete as they are; bytes that are not the image the key was
// issued for, or too many bytes or pixels, are refused and counted by reason, and nothing is
// written (issue 32).
func TestComplete(t *testing.T) {
	ctx := context.Background()
	png := "acme/1/20300405/0123456789abcdef0123456789abcdef.png"
	tests := []struct {
		name    string
		user    int64
		key     string
		data    string // "" uploads nothing
		want    apperr.Code
		thumb   bool
		refused string
	}{
		{"an image", 1, png, "IMG image/png", apperr.OK, true, ""},
		{"a pdf has no thumbnail", 1, "acme/1/20300405/0123456789abcdef0123456789abcdef.pdf", "%PDF", apperr.OK, false, ""},
		{"heic is not decoded", 1, "acme/1/20300405/0123456789abcdef0123456789abcdef.heic", "x", apperr.OK, false, ""},
		{"not uploaded yet", 1, png, "", apperr.NotFound, false, ""},
		{"another user's upload", 2, png, "IMG image/png", apperr.Forbidden, false, ""},
		{"another tenant's key", 1, "other/1/20300405/0123456789abcdef0123456789abcdef.png", "IMG image/png", apperr.NotFound, false, ""},
		{"a thumbnail's key", 1, png + ".thumb.jpg", "IMG image/jpeg", apperr.NotFound, false, ""},
		{"a jpeg under a png key", 1, png, "IMG image/jpeg", apperr.InvalidArgument, false, ports.RefusedType},
		{"no image", 1, png, "<html>", apperr.InvalidArgument, false, ports.RefusedType},
		{"a bomb", 1, png, "BOMB", apperr.TooLarge, false, ports.RefusedPixels},
		{"more bytes than the limit", 1, png, "IMG image/png" + strings.Repeat(" ", 100), apperr.TooLarge, false, ports.RefusedSize},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRights(t)
			r.svc = uploads.New(uploads.Config{ThumbSide: 200, ThumbMaxBytes: 100}, uploads.Deps{
				Store: r.store, Clock: memory.NewClock(time.Now()), Imager: imager{}, Metrics: r.metrics,
			})
			if tt.data != "" {
				if err := r.store.WriteObject(ctx, tt.key, "", []byte(tt.data)); err != nil {
					t.Fatal(err)
				}
			}
			got, err := r.svc.Complete(ctx, "acme", tt.user, tt.key)
			if apperr.CodeOf(err) != tt.want {
				t.Fatalf("Complete = %+v, %v; want code %d", got, err, tt.want)
			}
			thumb := objectkey.Thumb(tt.key, "jpg")
			stored, readErr := r.store.ReadObject(ctx, thumb, 1000)
			if !tt.thumb {
				if got.ThumbKey != "" || readErr == nil {
					t.Fatalf("Complete = %+v and stored %q; want no thumbnail", got, stored)
				}
			} else if got.ThumbKey != thumb || got.Width != 1200 || got.Height != 800 || string(stored) != "thumb 200" {
				t.Fatalf("Complete = %+v, stored %q (%v); want %s, 1200x800, thumb 200", got, stored, readErr, thumb)
			}
			made := 0.0
			if tt.thumb {
				made = 1
			}
			if n := r.metrics.Count("media_thumbnail_total", "made"); n != made {
				t.Fatalf("media_thumbnail_total{made} = %v, want %v", n, made)
			}
			if tt.refused != "" && r.metrics.Count("media_thumbnail_refused_total", tt.refused) != 1 {
				t.Fatalf("media_thumbnail_refused_total{%s} did not move", tt.refused)
			}
		})
	}
}

// holdingImager holds the worker of an image whose bytes are "IMG image/png hold" until
// released, so a test sees what the next completion does meanwhile.
type holdingImager struct {
	entered, release chan struct{}
}

func (h holdingImager) Thumbnail(ctx context.Context, data []byte, maxSide int) (ports.Thumbnail, error) {
	if strings.HasSuffix(string(data), " hold") {
		h.entered <- struct{}{}
		<-h.release
		data = bytes.TrimSuffix(data, []byte(" hold"))
	}
	return imager{}.Thumbnail(ctx, data, maxSide)
}

// countingStore counts the objects read.
type countingStore struct {
	*memory.ObjectStore
	reads atomic.Int32
}

func (c *countingStore) ReadObject(ctx context.Context, key string, limit int64) ([]byte, error) {
	c.reads.Add(1)
	return c.ObjectStore.ReadObject(ctx, key, limit)
}

// TestCompleteWaitsForAWorkerBeforeReading: with every thumbnail worker busy, a completion
// waits before it reads the image, so memory holds no more images than there are workers,
// and it gives up, unread, when its context ends (issue 32).
func TestCompleteWaitsForAWorkerBeforeReading(t *testing.T) {
	ctx := context.Background()
	held, waiting := "acme/1/20300405/0123456789abcdef0123456789abcdef.png", "acme/1/20300405/ffffffffffffffffffffffffffffffff.png"
	store := &countingStore{ObjectStore: memory.NewObjectStore()}
	for key, data := range map[string]string{held: "IMG image/png hold", waiting: "IMG image/png"} {
		if err := store.WriteObject(ctx, key, "", []byte(data)); err != nil {
			t.Fatal(err)
		}
	}
	h := holdingImager{entered: make(chan struct{}), release: make(chan struct{})}
	metrics := memory.NewMetrics()
	svc := uploads.New(uploads.Config{ThumbWorkers: 1}, uploads.Deps{
		Store: store, Clock: memory.NewClock(time.Now()), Imager: h, Metrics: metrics,
	})
	done := make(chan error)
	go func() {
		_, err := svc.Complete(ctx, "acme", 1, held)
		done <- err
	}()
	<-h.entered
	gone, cancel := context.WithCancel(ctx)
	cancel()
	_, err := svc.Complete(gone, "acme", 1, waiting)
	if apperr.CodeOf(err) != apperr.Busy {
		t.Fatalf("Complete with no free worker = %v, want 50301", err)
	}
	if n := store.reads.Load(); n != 1 {
		t.Fatalf("%d images read with one worker busy, want 1", n)
	}
	close(h.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got, err := svc.Complete(ctx, "acme", 1, waiting); err != nil || got.ThumbKey == "" {
		t.Fatalf("Complete once the worker is free = %+v, %v", got, err)
	}
}
