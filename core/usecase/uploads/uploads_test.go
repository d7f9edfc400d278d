package uploads_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/memory"
	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/objectkey"
	"github.com/imdhq/imd/core/usecase/uploads"
)

// signer records what it was asked to sign.
type signer struct {
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
			sig := &signer{}
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

func TestDownloadStaysInTheTenant(t *testing.T) {
	svc := uploads.New(uploads.Config{}, uploads.Deps{Store: &signer{}, Clock: memory.NewClock(time.Now())})
	ctx := context.Background()
	key := "acme/7/20300405/0123456789abcdef0123456789abcdef.png"
	if _, _, err := svc.Download(ctx, "acme", key); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ tenant, key string }{
		{"other", key},
		{"acme", "acme/7/../../secret.png"},
		{"acme", "acme/7/20300405/short.png"},
	} {
		if _, _, err := svc.Download(ctx, tc.tenant, tc.key); apperr.CodeOf(err) != apperr.NotFound {
			t.Errorf("Download(%s, %s) = %v, want 40401", tc.tenant, tc.key, err)
		}
	}
}
