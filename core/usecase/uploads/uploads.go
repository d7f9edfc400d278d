// Package uploads hands out short-lived object-store URLs for media (seed 003 §7.1 upload
// credentials): clients PUT the bytes straight to the store and send only the object key in a
// message (seed 003 §9.4: media only by reference). What a key looks like is the domain's
// (core/domain/objectkey), so the blob stores check keys without this use case. Who may read a
// key is decided here (issue 33): its uploader, anyone if it is its uploader's avatar, and the
// readers of each conversation a message referenced it in; the send and edit paths admit a key
// into a conversation only for a sender who may read it, so a learned key opens nothing. An
// uploaded image's thumbnail is made when its uploader confirms the upload (issue 32), stored
// beside it under a key derived from its own, and read by whoever may read the original.
package uploads

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/objectkey"
	"github.com/imdhq/imd/core/usecase/conversation"
	"github.com/imdhq/imd/ports"
)

// Defaults of Config.
const (
	DefaultMaxSize       = 100 << 20
	DefaultURLTTL        = 15 * time.Minute
	DefaultThumbSide     = 320
	DefaultThumbMaxBytes = 25 << 20
	DefaultThumbWorkers  = 2
)

// maxReferencingTopics bounds the conversations a download checks for one key: a key is
// shared by forwarding it, one conversation at a time, so a reader's conversation is among the
// first few; past the bound a reader is refused rather than a request made unbounded.
const maxReferencingTopics = 256

// Config bounds uploads.
type Config struct {
	MaxSize int64         // bytes per object; 0 = DefaultMaxSize
	URLTTL  time.Duration // lifetime of a signed URL; 0 = DefaultURLTTL
	// ThumbSide is the long side of a thumbnail in pixels; 0 = DefaultThumbSide.
	ThumbSide int
	// ThumbMaxBytes is the largest image a thumbnail is made of; 0 = DefaultThumbMaxBytes.
	ThumbMaxBytes int64
	// ThumbWorkers is how many thumbnails are made at once, counted from reading the image:
	// more wait their turn before their bytes are read, so memory holds at most ThumbWorkers
	// images (issue 32); 0 = DefaultThumbWorkers.
	ThumbWorkers int
}

// Deps are the ports uploads use.
type Deps struct {
	Store ports.ObjectStore
	Clock ports.Clock
	// Refs are the conversations each key was sent in.
	Refs ports.MediaRefs
	// Profiles tells whether a key is its uploader's avatar, which every user may see.
	Profiles ports.Profiles
	// Resolver says who may read a conversation, as for its history.
	Resolver *conversation.Resolver
	// Imager makes thumbnails of confirmed image uploads.
	Imager  ports.Imager
	Metrics ports.Metrics
}

// Service issues upload and download URLs and admits keys into conversations.
type Service struct {
	cfg   Config
	d     Deps
	turns chan struct{} // a thumbnail worker each
}

var _ ports.MediaAdmission = (*Service)(nil)

// New returns the service.
func New(cfg Config, d Deps) *Service {
	if cfg.MaxSize <= 0 {
		cfg.MaxSize = DefaultMaxSize
	}
	if cfg.URLTTL <= 0 {
		cfg.URLTTL = DefaultURLTTL
	}
	if cfg.ThumbSide <= 0 {
		cfg.ThumbSide = DefaultThumbSide
	}
	if cfg.ThumbMaxBytes <= 0 {
		cfg.ThumbMaxBytes = DefaultThumbMaxBytes
	}
	if cfg.ThumbWorkers <= 0 {
		cfg.ThumbWorkers = DefaultThumbWorkers
	}
	return &Service{cfg: cfg, d: d, turns: make(chan struct{}, cfg.ThumbWorkers)}
}

// Request asks to upload one object.
type Request struct {
	Tenant      string
	User        int64
	ContentType string
	Size        int64
}

// Grant is a signed upload: PUT the bytes to URL with the Content-Type header before
// ExpiresAt, then send Key in the message content.
type Grant struct {
	Key         string
	URL         string
	ContentType string
	MaxSize     int64
	ExpiresAt   time.Time
}

// Upload signs a PUT for a new, unguessable key under the tenant and user.
func (s *Service) Upload(ctx context.Context, r Request) (Grant, error) {
	ext, ok := objectkey.Extension(r.ContentType)
	if !ok {
		return Grant{}, apperr.New(apperr.InvalidArgument, "content_type is not accepted")
	}
	if r.Size <= 0 {
		return Grant{}, apperr.New(apperr.InvalidArgument, "size must be positive")
	}
	if r.Size > s.cfg.MaxSize {
		return Grant{}, apperr.New(apperr.TooLarge, "size exceeds "+strconv.FormatInt(s.cfg.MaxSize, 10)+" bytes")
	}
	var raw [16]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return Grant{}, apperr.Wrap(apperr.Internal, "key generation failed", err)
	}
	now := s.d.Clock.Now().UTC()
	key := objectkey.New(r.Tenant, r.User, now, raw, ext)
	expires := now.Add(s.cfg.URLTTL).Truncate(time.Second)
	url, err := s.d.Store.PresignPut(ctx, key, r.ContentType, r.Size, expires)
	if err != nil {
		return Grant{}, apperr.Wrap(apperr.Busy, "object store unavailable", err)
	}
	return Grant{Key: key, URL: url, ContentType: r.ContentType, MaxSize: r.Size, ExpiresAt: expires}, nil
}

// Completed is a confirmed upload: for an image, its thumbnail's key and its dimensions.
type Completed struct {
	Key           string
	ThumbKey      string // empty when no thumbnail is made (not an image type that is decoded)
	Width, Height int
}

// thumbnailed are the upload types a thumbnail is made of; other media complete as they are.
var thumbnailed = map[string]bool{"image/jpeg": true, "image/png": true, "image/gif": true, "image/webp": true}

// refusalCodes answer each refused image (ports.ImageRefusal.Reason).
var refusalCodes = map[string]apperr.Code{
	ports.RefusedType: apperr.InvalidArgument, ports.RefusedCorrupt: apperr.InvalidArgument,
	ports.RefusedSize: apperr.TooLarge, ports.RefusedPixels: apperr.TooLarge,
}

// Complete confirms an upload of the caller's (issue 32): an image of a decoded type is read
// back, no more than ThumbMaxBytes, and its thumbnail written beside it under
// objectkey.Thumb. The bytes must be of the type the key was issued for, sniffed, never taken
// from the client; a refused image is 40001 (not that type, undecodable) or 41301 (too many
// bytes or pixels) and nothing is written. Completing twice makes the same thumbnail again.
func (s *Service) Complete(ctx context.Context, tenant string, user int64, key string) (Completed, error) {
	if !objectkey.Valid(key) || objectkey.IsThumb(key) || objectkey.Tenant(key) != tenant {
		return Completed{}, apperr.New(apperr.NotFound, "no such object")
	}
	if objectkey.User(key) != user {
		return Completed{}, apperr.New(apperr.Forbidden, "only its uploader completes an upload")
	}
	declared, _ := objectkey.ContentType(key)
	if !thumbnailed[declared] {
		return Completed{Key: key}, nil
	}
	select {
	case s.turns <- struct{}{}:
		defer func() { <-s.turns }()
	case <-ctx.Done():
		return Completed{}, s.failed("thumbnail not made", fmt.Errorf("waiting for a thumbnail worker: %w", ctx.Err()))
	}
	data, err := s.d.Store.ReadObject(ctx, key, s.cfg.ThumbMaxBytes)
	switch apperr.CodeOf(err) {
	case apperr.OK:
	case apperr.NotFound:
		return Completed{}, apperr.New(apperr.NotFound, "no object uploaded under this key yet")
	case apperr.TooLarge:
		return Completed{}, s.refused(&ports.ImageRefusal{Reason: ports.RefusedSize, Detail: err.Error()})
	default:
		return Completed{}, s.failed("object store unavailable", err)
	}
	start := s.d.Clock.Now()
	t, err := s.d.Imager.Thumbnail(ctx, data, s.cfg.ThumbSide)
	if err != nil {
		return Completed{}, s.refused(err)
	}
	if t.Source != declared {
		return Completed{}, s.refused(&ports.ImageRefusal{Reason: ports.RefusedType, Detail: "bytes are " + t.Source + ", not " + declared})
	}
	thumb := objectkey.Thumb(key, t.Ext)
	if err := s.d.Store.WriteObject(ctx, thumb, t.ContentType, t.Data); err != nil {
		return Completed{}, s.failed("thumbnail not stored", err)
	}
	s.d.Metrics.Inc("media_thumbnail_total", "made")
	s.d.Metrics.Observe("media_thumbnail_seconds", s.d.Clock.Now().Sub(start).Seconds())
	return Completed{Key: key, ThumbKey: thumb, Width: t.Width, Height: t.Height}, nil
}

// refused counts and answers an image no thumbnail is made of; an error that is no refusal
// failed.
func (s *Service) refused(err error) error {
	var r *ports.ImageRefusal
	if !errors.As(err, &r) {
		return s.failed("thumbnail not made", err)
	}
	s.d.Metrics.Inc("media_thumbnail_refused_total", r.Reason)
	return apperr.Wrap(refusalCodes[r.Reason], "image refused: "+r.Detail, err)
}

// failed counts a thumbnail that the store or the server could not make: retrying may.
func (s *Service) failed(msg string, err error) error {
	s.d.Metrics.Inc("media_thumbnail_total", "failed")
	return apperr.Wrap(apperr.Busy, msg+", retry", err)
}

// Download signs a GET of a key for a user who may read it: 40401 for what is no key of the
// tenant, 40301 for a key the user has no right to (issue 33).
func (s *Service) Download(ctx context.Context, tenant string, user int64, key string) (string, time.Time, error) {
	if !objectkey.Valid(key) || objectkey.Tenant(key) != tenant {
		return "", time.Time{}, apperr.New(apperr.NotFound, "no such object")
	}
	if err := s.mayRead(ctx, tenant, user, key); err != nil {
		return "", time.Time{}, err
	}
	expires := s.d.Clock.Now().UTC().Add(s.cfg.URLTTL).Truncate(time.Second)
	url, err := s.d.Store.PresignGet(ctx, key, expires)
	if err != nil {
		return "", time.Time{}, apperr.Wrap(apperr.Busy, "object store unavailable", err)
	}
	return url, expires, nil
}

// AdmitMedia lets a message of topic carry key: a key of the tenant the sender may read. The
// reference is recorded before the message is stored, so every stored message's readers may
// read its media; a send that fails after it leaves a reference the sender could have made
// good by retrying, to a key it may read.
func (s *Service) AdmitMedia(ctx context.Context, tenant string, user int64, key, topicName string) error {
	if !objectkey.Valid(key) || objectkey.IsThumb(key) || objectkey.Tenant(key) != tenant {
		return apperr.New(apperr.InvalidArgument, "content.key is not an uploaded object key of this tenant")
	}
	if err := s.mayRead(ctx, tenant, user, key); err != nil {
		return err
	}
	if err := s.d.Refs.AddMediaRef(ctx, tenant, key, topicName); err != nil {
		return apperr.Wrap(apperr.Busy, "media reference not recorded, retry", err)
	}
	return nil
}

// Backfill records the media references of stored messages (the reindex command), so the
// messages stored before references were kept open their media to their readers too. Only
// keys of the tenant's shape are recorded; recording one twice does no harm.
func (s *Service) Backfill(ctx context.Context, tenant string, msgs []message.Message) error {
	for _, m := range msgs {
		key, media := (message.Draft{Type: m.Type, Content: m.Content}).MediaKey()
		if !media || !objectkey.Valid(key) || objectkey.Tenant(key) != tenant {
			continue
		}
		if err := s.d.Refs.AddMediaRef(ctx, tenant, key, m.Topic); err != nil {
			return fmt.Errorf("media reference of %s seq %d: %w", m.Topic, m.Seq, err)
		}
	}
	return nil
}

// mayRead is nil when user uploaded key, when key is its uploader's avatar, or when a
// conversation user may read references it; otherwise 40301. A thumbnail is read by the
// rights of its original (issue 32).
func (s *Service) mayRead(ctx context.Context, tenant string, user int64, key string) error {
	key = objectkey.Original(key)
	uploader := objectkey.User(key)
	if uploader == user {
		return nil
	}
	p, err := s.d.Profiles.Profile(ctx, tenant, uploader)
	switch {
	case err == nil && p.Avatar == key:
		return nil
	case err != nil && apperr.CodeOf(err) != apperr.NotFound:
		return apperr.Wrap(apperr.Busy, "object rights unavailable, retry", err)
	}
	topics, err := s.d.Refs.MediaTopics(ctx, tenant, key, maxReferencingTopics)
	if err != nil {
		return apperr.Wrap(apperr.Busy, "object rights unavailable, retry", err)
	}
	for _, t := range topics {
		_, err := s.d.Resolver.ForRead(ctx, tenant, user, conversation.Address{Topic: t})
		switch code := apperr.CodeOf(err); {
		case err == nil:
			return nil
		case code != apperr.Forbidden && code != apperr.NotFound:
			return err
		}
	}
	return apperr.New(apperr.Forbidden, "no conversation of yours references this object")
}
