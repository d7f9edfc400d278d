// Package localfs is the development object store: files in a local directory, written and
// read through the HTTP listener's /files/ route with HMAC-signed, expiring URLs, the way a
// client would use presigned S3 URLs (ports.ObjectStore).
package localfs

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/objectkey"
	"github.com/imdhq/imd/ports"
)

// Errors of signed requests, with the contract code and message the /files/ route answers.
var (
	ErrBadSignature = apperr.Wrap(apperr.Forbidden, "invalid or expired signature", errors.New("localfs: bad or missing signature"))
	ErrExpired      = apperr.Wrap(apperr.Forbidden, "invalid or expired signature", errors.New("localfs: url expired"))
	ErrBadKey       = apperr.Wrap(apperr.NotFound, "no such object", errors.New("localfs: invalid key"))
	ErrTooLarge     = apperr.Wrap(apperr.TooLarge, "object larger than signed", errors.New("localfs: object larger than signed"))
	ErrNotFound     = apperr.Wrap(apperr.NotFound, "no such object", errors.New("localfs: no such object"))
)

// Config of the store.
type Config struct {
	Dir     string // where objects live
	BaseURL string // scheme://host[:port] of the HTTP listener, as clients reach it
	Secret  []byte // HMAC key of the URLs
}

// Store keeps objects under Dir and signs URLs for them.
type Store struct {
	cfg Config
	now func() time.Time
}

var _ ports.ObjectStore = (*Store)(nil)

// New creates Dir if missing.
func New(cfg Config) (*Store, error) {
	if len(cfg.Secret) == 0 {
		return nil, errors.New("localfs: empty secret")
	}
	if err := os.MkdirAll(cfg.Dir, 0o750); err != nil {
		return nil, fmt.Errorf("localfs: create %s: %w", cfg.Dir, err)
	}
	cfg.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	return &Store{cfg: cfg, now: time.Now}, nil
}

// PresignPut signs one PUT of at most maxSize bytes of contentType.
func (s *Store) PresignPut(_ context.Context, key, contentType string, maxSize int64, expires time.Time) (string, error) {
	if !objectkey.Valid(key) {
		return "", ErrBadKey
	}
	q := url.Values{"op": {"put"}, "ct": {contentType}, "max": {strconv.FormatInt(maxSize, 10)}, "exp": {strconv.FormatInt(expires.Unix(), 10)}}
	q.Set("sig", s.sign(key, q))
	return s.cfg.BaseURL + "/files/" + key + "?" + q.Encode(), nil
}

// PresignGet signs reads of key.
func (s *Store) PresignGet(_ context.Context, key string, expires time.Time) (string, error) {
	if !objectkey.Valid(key) {
		return "", ErrBadKey
	}
	q := url.Values{"op": {"get"}, "exp": {strconv.FormatInt(expires.Unix(), 10)}}
	q.Set("sig", s.sign(key, q))
	return s.cfg.BaseURL + "/files/" + key + "?" + q.Encode(), nil
}

// sign is HMAC-SHA256 over the key and every signed parameter, in a fixed order, so no
// parameter can be changed or moved to another key.
func (s *Store) sign(key string, q url.Values) string {
	m := hmac.New(sha256.New, s.cfg.Secret)
	for _, part := range []string{key, q.Get("op"), q.Get("ct"), q.Get("max"), q.Get("exp")} {
		io.WriteString(m, part)
		m.Write([]byte{0})
	}
	return hex.EncodeToString(m.Sum(nil))
}

// check verifies signature, operation and expiry of a request for key.
func (s *Store) check(key, op string, q url.Values) error {
	if !objectkey.Valid(key) {
		return ErrBadKey
	}
	got, err := hex.DecodeString(q.Get("sig"))
	if err != nil || q.Get("op") != op {
		return ErrBadSignature
	}
	want, _ := hex.DecodeString(s.sign(key, q))
	if !hmac.Equal(got, want) {
		return ErrBadSignature
	}
	exp, err := strconv.ParseInt(q.Get("exp"), 10, 64)
	if err != nil {
		return ErrBadSignature
	}
	if s.now().Unix() > exp {
		return ErrExpired
	}
	return nil
}

// Put stores the body of a signed PUT. The Content-Type must be the signed one and the body
// at most the signed size; the object appears whole or not at all.
func (s *Store) Put(key string, q url.Values, contentType string, body io.Reader) error {
	if err := s.check(key, "put", q); err != nil {
		return err
	}
	if contentType != q.Get("ct") {
		return ErrBadSignature
	}
	maxSize, err := strconv.ParseInt(q.Get("max"), 10, 64)
	if err != nil {
		return ErrBadSignature
	}
	return s.write(key, body, maxSize)
}

// write stores at most maxSize bytes of body under key: the object appears whole or not at
// all.
func (s *Store) write(key string, body io.Reader, maxSize int64) error {
	path := s.path(key)
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return fmt.Errorf("localfs: put %s: %w", key, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".upload-*")
	if err != nil {
		return fmt.Errorf("localfs: put %s: %w", key, err)
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	n, err := io.Copy(tmp, io.LimitReader(body, maxSize+1))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("localfs: put %s: %w", key, err)
	}
	if n > maxSize {
		return ErrTooLarge
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("localfs: put %s: %w", key, err)
	}
	return nil
}

// ReadObject reads an object for the server itself (issue 32: its thumbnail).
func (s *Store) ReadObject(_ context.Context, key string, limit int64) ([]byte, error) {
	if !objectkey.Valid(key) {
		return nil, ErrBadKey
	}
	f, err := os.Open(s.path(key))
	if errors.Is(err, os.ErrNotExist) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("localfs: read %s: %w", key, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("localfs: read %s: %w", key, err)
	}
	if int64(len(data)) > limit {
		return nil, apperr.New(apperr.TooLarge, "object larger than "+strconv.FormatInt(limit, 10)+" bytes")
	}
	return data, nil
}

// WriteObject stores an object the server made; the content type follows from the key's
// extension when it is served.
func (s *Store) WriteObject(_ context.Context, key, _ string, data []byte) error {
	if !objectkey.Valid(key) {
		return ErrBadKey
	}
	return s.write(key, bytes.NewReader(data), int64(len(data)))
}

// Open opens the object of a signed GET; the caller closes it.
func (s *Store) Open(key string, q url.Values) (*os.File, error) {
	if err := s.check(key, "get", q); err != nil {
		return nil, err
	}
	f, err := os.Open(s.path(key))
	if errors.Is(err, os.ErrNotExist) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("localfs: open %s: %w", key, err)
	}
	return f, nil
}

// path maps a key to its file; ValidKey allows no "..", so it stays under Dir.
func (s *Store) path(key string) string { return filepath.Join(s.cfg.Dir, filepath.FromSlash(key)) }
