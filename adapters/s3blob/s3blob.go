// Package s3blob is an S3-compatible object store (AWS S3, MinIO, Ceph RGW, versitygw…)
// through the AWS SDK's S3 client: ports.BlobStore for archive files the server writes and
// reads itself, and ports.ObjectStore for clients' media, which move straight between the
// client and the store on presigned URLs. Requests are path-style or virtual-hosted, signed
// with SigV4. Checksums beyond SigV4's payload hash are only sent when an operation requires them,
// since many S3-compatible servers reject the newer trailing-checksum encodings.
package s3blob

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/archive"
	"github.com/imdhq/imd/core/domain/objectkey"
	"github.com/imdhq/imd/ports"
)

// Config locates the bucket and signs requests.
type Config struct {
	// Endpoint is the server's base URL, e.g. http://127.0.0.1:9000; empty uses AWS's.
	Endpoint  string
	Region    string
	Bucket    string
	AccessKey string
	SecretKey string
	// Prefix is put before every key, e.g. "imd/"; it lets several deployments share a bucket.
	Prefix string
	// PathStyle addresses the bucket in the path (most self-hosted servers) instead of the host.
	PathStyle bool
	// PublicEndpoint is the base URL presigned URLs carry, when clients reach the server under
	// another name than imd does (e.g. https://media.example.com vs http://s3:9000); empty is
	// Endpoint.
	PublicEndpoint string
}

// Store keeps objects in one bucket.
type Store struct {
	c       *s3.Client
	presign *s3.PresignClient
	bucket  string
	prefix  string
}

var (
	_ ports.BlobStore   = (*Store)(nil)
	_ ports.ObjectStore = (*Store)(nil)
)

// New returns a store; nothing connects until the first call.
func New(cfg Config) (*Store, error) {
	if cfg.Bucket == "" || cfg.Region == "" || cfg.AccessKey == "" || cfg.SecretKey == "" {
		return nil, errors.New("s3blob: bucket, region, access key and secret key are required")
	}
	if cfg.Prefix != "" && !strings.HasSuffix(cfg.Prefix, "/") {
		cfg.Prefix += "/"
	}
	opts := s3.Options{
		Region:                     cfg.Region,
		Credentials:                credentials.NewStaticCredentialsProvider(cfg.AccessKey, cfg.SecretKey, ""),
		UsePathStyle:               cfg.PathStyle,
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
	}
	if cfg.Endpoint != "" {
		opts.BaseEndpoint = aws.String(cfg.Endpoint)
	}
	c := s3.New(opts)
	signer := c
	if cfg.PublicEndpoint != "" {
		signer = s3.New(opts, func(o *s3.Options) { o.BaseEndpoint = aws.String(cfg.PublicEndpoint) })
	}
	return &Store{c: c, presign: s3.NewPresignClient(signer), bucket: cfg.Bucket, prefix: cfg.Prefix}, nil
}

// PresignPut signs one PUT of exactly size bytes of contentType: both headers are signed, so
// the store refuses another type or length (size is what the client declared, within the
// configured maximum).
func (s *Store) PresignPut(ctx context.Context, key, contentType string, size int64, expires time.Time) (string, error) {
	if !objectkey.Valid(key) {
		return "", fmt.Errorf("s3 presign put %q: invalid key", key)
	}
	req, err := s.presign.PresignPutObject(ctx, &s3.PutObjectInput{
		Bucket: aws.String(s.bucket), Key: aws.String(s.prefix + key),
		ContentType: aws.String(contentType), ContentLength: aws.Int64(size),
	}, s3.WithPresignExpires(time.Until(expires)))
	if err != nil {
		return "", fmt.Errorf("s3 presign put %s: %w", key, err)
	}
	return req.URL, nil
}

// PresignGet signs reads of key until expires.
func (s *Store) PresignGet(ctx context.Context, key string, expires time.Time) (string, error) {
	if !objectkey.Valid(key) {
		return "", fmt.Errorf("s3 presign get %q: invalid key", key)
	}
	req, err := s.presign.PresignGetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(s.prefix + key)},
		s3.WithPresignExpires(time.Until(expires)))
	if err != nil {
		return "", fmt.Errorf("s3 presign get %s: %w", key, err)
	}
	return req.URL, nil
}

// Put uploads the object in one PUT; its SigV4 signature covers the payload's SHA-256.
func (s *Store) Put(ctx context.Context, key string, data []byte) error {
	_, err := s.c.PutObject(ctx, &s3.PutObjectInput{
		Bucket: aws.String(s.bucket), Key: aws.String(s.prefix + key),
		Body: bytes.NewReader(data), ContentLength: aws.Int64(int64(len(data))),
	})
	if err != nil {
		return fmt.Errorf("s3 put %s: %w", key, err)
	}
	return nil
}

// Get downloads a whole object.
func (s *Store) Get(ctx context.Context, key string) ([]byte, error) {
	out, found, err := s.getObject(ctx, key)
	if !found {
		return nil, fmt.Errorf("s3 get %s: %w", key, archive.ErrNoBlob)
	}
	if err != nil {
		return nil, fmt.Errorf("s3 get %s: %w", key, err)
	}
	defer out.Body.Close()
	data, err := io.ReadAll(out.Body)
	if err != nil {
		return nil, fmt.Errorf("s3 get %s: %w", key, err)
	}
	return data, nil
}

// getObject starts reading key; found is false for an absent object.
func (s *Store) getObject(ctx context.Context, key string) (out *s3.GetObjectOutput, found bool, err error) {
	out, err = s.c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(s.prefix + key)})
	var noKey *types.NoSuchKey
	return out, !errors.As(err, &noKey), err
}

// ReadObject reads a media object for the server itself (issue 32: its thumbnail), refusing
// one longer than limit by its length before reading it.
func (s *Store) ReadObject(ctx context.Context, key string, limit int64) ([]byte, error) {
	if !objectkey.Valid(key) {
		return nil, apperr.New(apperr.NotFound, "no such object")
	}
	out, found, err := s.getObject(ctx, key)
	if !found {
		return nil, apperr.Wrap(apperr.NotFound, "no such object", err)
	}
	if err != nil {
		return nil, fmt.Errorf("s3 read %s: %w", key, err)
	}
	defer out.Body.Close()
	tooLarge := apperr.New(apperr.TooLarge, "object larger than "+strconv.FormatInt(limit, 10)+" bytes")
	if aws.ToInt64(out.ContentLength) > limit {
		return nil, tooLarge
	}
	data, err := io.ReadAll(io.LimitReader(out.Body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("s3 read %s: %w", key, err)
	}
	if int64(len(data)) > limit {
		return nil, tooLarge
	}
	return data, nil
}

// WriteObject stores a media object the server made, with the content type presigned GETs
// serve it as.
func (s *Store) WriteObject(ctx context.Context, key, contentType string, data []byte) error {
	if !objectkey.Valid(key) {
		return fmt.Errorf("s3 write %q: invalid key", key)
	}
	_, err := s.c.PutObject(ctx, &s3.PutObjectInput{
		Bucket: aws.String(s.bucket), Key: aws.String(s.prefix + key), ContentType: aws.String(contentType),
		Body: bytes.NewReader(data), ContentLength: aws.Int64(int64(len(data))),
	})
	if err != nil {
		return fmt.Errorf("s3 write %s: %w", key, err)
	}
	return nil
}

// List pages ListObjectsV2 under the prefix; S3 returns keys in ascending order.
func (s *Store) List(ctx context.Context, prefix string) ([]string, error) {
	var keys []string
	p := s3.NewListObjectsV2Paginator(s.c, &s3.ListObjectsV2Input{Bucket: aws.String(s.bucket), Prefix: aws.String(s.prefix + prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("s3 list %s: %w", prefix, err)
		}
		for _, o := range page.Contents {
			keys = append(keys, strings.TrimPrefix(aws.ToString(o.Key), s.prefix))
		}
	}
	return keys, nil
}

// Delete removes an object; S3 answers a delete of an absent key with success too.
func (s *Store) Delete(ctx context.Context, key string) error {
	_, err := s.c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(s.prefix + key)})
	if err != nil {
		return fmt.Errorf("s3 delete %s: %w", key, err)
	}
	return nil
}
