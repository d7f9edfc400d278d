// Package uploads hands out short-lived object-store URLs for media (seed 003 §7.1 upload
// credentials): clients PUT the bytes straight to the store and send only the object key in a
// message (seed 003 §9.4: media only by reference). What a key looks like is the domain's
// (core/domain/objectkey), so the blob stores check keys without this use case.
package uploads

import (
	"context"
	"crypto/rand"
	"strconv"
	"time"

	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/objectkey"
	"github.com/imdhq/imd/ports"
)

// Defaults of Config.
const (
	DefaultMaxSize = 100 << 20
	DefaultURLTTL  = 15 * time.Minute
)

// Config bounds uploads.
type Config struct {
	MaxSize int64         // bytes per object; 0 = DefaultMaxSize
	URLTTL  time.Duration // lifetime of a signed URL; 0 = DefaultURLTTL
}

// Deps are the ports uploads use.
type Deps struct {
	Store ports.ObjectStore
	Clock ports.Clock
}

// Service issues upload and download URLs.
type Service struct {
	cfg Config
	d   Deps
}

// New returns the service.
func New(cfg Config, d Deps) *Service {
	if cfg.MaxSize <= 0 {
		cfg.MaxSize = DefaultMaxSize
	}
	if cfg.URLTTL <= 0 {
		cfg.URLTTL = DefaultURLTTL
	}
	return &Service{cfg: cfg, d: d}
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

// Download signs a GET of a key of the tenant. Keys are unguessable, so any user of the tenant
// holding one (from a message) may read it; another tenant's key is never signed.
func (s *Service) Download(ctx context.Context, tenant, key string) (string, time.Time, error) {
	if !objectkey.Valid(key) || objectkey.Tenant(key) != tenant {
		return "", time.Time{}, apperr.New(apperr.NotFound, "no such object")
	}
	expires := s.d.Clock.Now().UTC().Add(s.cfg.URLTTL).Truncate(time.Second)
	url, err := s.d.Store.PresignGet(ctx, key, expires)
	if err != nil {
		return "", time.Time{}, apperr.Wrap(apperr.Busy, "object store unavailable", err)
	}
	return url, expires, nil
}
