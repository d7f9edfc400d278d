// Package uploads hands out short-lived object-store URLs for media (seed 003 §7.1 upload
// credentials): clients PUT the bytes straight to the store and send only the object key in a
// message (seed 003 §9.4: media only by reference).
package uploads

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/ports"
)

// Defaults of Config.
const (
	DefaultMaxSize = 100 << 20
	DefaultURLTTL  = 15 * time.Minute
)

// extensions are the content types a client may upload, with the extension their keys get. A
// short list on purpose: the store serves these bytes back, and nothing on it may be taken for
// a page (text/html, image/svg+xml).
var extensions = map[string]string{
	"image/jpeg": "jpg", "image/png": "png", "image/gif": "gif", "image/webp": "webp", "image/heic": "heic",
	"audio/mpeg": "mp3", "audio/aac": "aac", "audio/ogg": "ogg", "audio/amr": "amr", "audio/mp4": "m4a",
	"video/mp4": "mp4", "video/quicktime": "mov", "video/webm": "webm",
	"application/pdf": "pdf", "application/zip": "zip", "application/octet-stream": "bin",
}

// ContentTypeOf returns the content type a key was issued for, from its extension.
func ContentTypeOf(key string) (string, bool) {
	dot := strings.LastIndexByte(key, '.')
	if dot < 0 {
		return "", false
	}
	for ct, ext := range extensions {
		if ext == key[dot+1:] {
			return ct, true
		}
	}
	return "", false
}

// keyRE is the shape of every key this package issues: tenant/user/day/random.ext.
var keyRE = regexp.MustCompile(`^[a-z][a-z0-9_]{0,30}/[1-9][0-9]{0,18}/[0-9]{8}/[0-9a-f]{32}\.[a-z0-9]{2,5}$`)

// ValidKey reports whether key has the shape of an issued key, so it can name a file without
// escaping its directory.
func ValidKey(key string) bool { return keyRE.MatchString(key) }

// KeyTenant returns the tenant an issued key belongs to.
func KeyTenant(key string) string {
	t, _, _ := strings.Cut(key, "/")
	return t
}

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
	ext, ok := extensions[r.ContentType]
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
	key := r.Tenant + "/" + strconv.FormatInt(r.User, 10) + "/" + now.Format("20060102") + "/" + hex.EncodeToString(raw[:]) + "." + ext
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
	if !ValidKey(key) || KeyTenant(key) != tenant {
		return "", time.Time{}, apperr.New(apperr.NotFound, "no such object")
	}
	expires := s.d.Clock.Now().UTC().Add(s.cfg.URLTTL).Truncate(time.Second)
	url, err := s.d.Store.PresignGet(ctx, key, expires)
	if err != nil {
		return "", time.Time{}, apperr.Wrap(apperr.Busy, "object store unavailable", err)
	}
	return url, expires, nil
}
