package s3blob

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/imdhq/imd/ports"
	"github.com/imdhq/imd/ports/contract"
)

// The buckets deploy/local/services.sh creates on its S3 server (versitygw).
const (
	archiveBucket = "imd-archive"
	uploadsBucket = "imd-uploads"
)

// realStore is a store on the S3 server of deploy/local/services.sh (IMD_TEST_S3_*), under
// a fresh prefix, emptied when the test ends. Without the server the test skips, unless
// IMD_REQUIRE_SERVICES=1.
func realStore(t *testing.T, bucket string) *Store {
	t.Helper()
	endpoint := os.Getenv("IMD_TEST_S3_ENDPOINT")
	if endpoint == "" {
		if os.Getenv("IMD_REQUIRE_SERVICES") == "1" {
			t.Fatal("IMD_TEST_S3_ENDPOINT is unset and IMD_REQUIRE_SERVICES=1")
		}
		t.Skip("IMD_TEST_S3_ENDPOINT is unset")
	}
	raw := make([]byte, 6)
	_, _ = rand.Read(raw)
	s, err := New(Config{Endpoint: endpoint, Region: "us-east-1", Bucket: bucket, PathStyle: true,
		AccessKey: os.Getenv("IMD_TEST_S3_ACCESS_KEY"), SecretKey: os.Getenv("IMD_TEST_S3_SECRET_KEY"),
		Prefix: "test-" + hex.EncodeToString(raw)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		keys, err := s.List(ctx, "")
		if err != nil {
			t.Errorf("cleanup list: %v", err)
		}
		for _, k := range keys {
			if err := s.Delete(ctx, k); err != nil {
				t.Errorf("cleanup: %v", err)
			}
		}
	})
	return s
}

func TestBlobStoreContractRealServer(t *testing.T) {
	contract.BlobStore(t, func(t *testing.T) ports.BlobStore { return realStore(t, archiveBucket) })
}

// TestPresignedUploadRealServer: a client PUTs a media object straight to the store on the
// presigned URL, with the signed type and length only, and reads it back on a presigned GET.
func TestObjectStoreContractRealServer(t *testing.T) {
	contract.ObjectStore(t, realStore(t, uploadsBucket), "acme/7/20300101/0123456789abcdef0123456789abcdef.png.thumb.jpg")
}

func TestPresignedUploadRealServer(t *testing.T) {
	s := realStore(t, uploadsBucket)
	ctx := context.Background()
	const key = "acme/7/20261201/0123456789abcdef0123456789abcdef.png"
	body := []byte("\x89PNG not really, but bytes")
	put, err := s.PresignPut(ctx, key, "image/png", int64(len(body)), time.Now().Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name        string
		contentType string
		body        []byte
		wantOK      bool
	}{
		{"another content type", "text/html", body, false},
		{"longer than signed", "image/png", append(bytes.Clone(body), "more"...), false},
		{"shorter than signed", "image/png", body[:3], false},
		{"as signed", "image/png", body, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(ctx, http.MethodPut, put, bytes.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", tt.contentType)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			msg, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if ok := resp.StatusCode == http.StatusOK; ok != tt.wantOK {
				t.Fatalf("PUT = %d %s, want success %v", resp.StatusCode, msg, tt.wantOK)
			}
		})
	}
	get, err := s.PresignGet(ctx, key, time.Now().Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(get)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !bytes.Equal(got, body) {
		t.Fatalf("GET = %d %q, want %q", resp.StatusCode, got, body)
	}
	if resp, err := http.Get(strings.Replace(get, "X-Amz-Signature=", "X-Amz-Signature=0", 1)); err != nil || resp.StatusCode == http.StatusOK {
		t.Fatalf("a tampered GET was served: %v %v", resp, err)
	}
	if _, err := s.PresignPut(ctx, "../escape", "image/png", 1, time.Now().Add(time.Minute)); err == nil {
		t.Fatal("an invalid key was signed")
	}
}

// TestPublicEndpoint: presigned URLs name the endpoint clients reach, not imd's.
func TestPublicEndpoint(t *testing.T) {
	s, err := New(Config{Endpoint: "http://s3:9000", PublicEndpoint: "https://media.example.com", Region: "us-east-1",
		Bucket: "imd-uploads", AccessKey: "AKID", SecretKey: "secret", PathStyle: true})
	if err != nil {
		t.Fatal(err)
	}
	u, err := s.PresignGet(context.Background(), "acme/7/20261201/0123456789abcdef0123456789abcdef.png", time.Now().Add(time.Minute))
	if err != nil || !strings.HasPrefix(u, "https://media.example.com/imd-uploads/acme/7/") {
		t.Fatalf("presigned %q, %v", u, err)
	}
}

// TestWrongSecretRefusedRealServer: the real server checks the signature too.
func TestWrongSecretRefusedRealServer(t *testing.T) {
	good := realStore(t, archiveBucket)
	ctx := context.Background()
	if err := good.Put(ctx, "t1/202601/manifest.json", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	bad, err := New(Config{Endpoint: os.Getenv("IMD_TEST_S3_ENDPOINT"), Region: "us-east-1", Bucket: archiveBucket, PathStyle: true,
		AccessKey: os.Getenv("IMD_TEST_S3_ACCESS_KEY"), SecretKey: "wrong", Prefix: good.prefix})
	if err != nil {
		t.Fatal(err)
	}
	if err := bad.Put(ctx, "t1/x", []byte("x")); err == nil {
		t.Fatal("a write signed with the wrong secret was accepted")
	}
	if _, err := bad.Get(ctx, "t1/202601/manifest.json"); err == nil {
		t.Fatal("a read signed with the wrong secret was accepted")
	}
}
