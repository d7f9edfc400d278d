package s3blob

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/imdhq/imd/ports"
	"github.com/imdhq/imd/ports/contract"
)

func newFake(t *testing.T) (*fakeS3, *httptest.Server) {
	t.Helper()
	f := &fakeS3{bucket: "archive", region: "us-east-1", accessKey: "AKIDIMDTEST", secretKey: "imd-test-secret", pageSize: 2, objects: map[string][]byte{}}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv
}

func TestBlobStoreContract(t *testing.T) {
	contract.BlobStore(t, func(t *testing.T) ports.BlobStore {
		f, srv := newFake(t)
		s, err := New(Config{Endpoint: srv.URL, Region: f.region, Bucket: f.bucket, AccessKey: f.accessKey, SecretKey: f.secretKey, PathStyle: true, Prefix: "imd"})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// TestRequestsAreSignedAndPrefixed: every call reaches the server signed, under the prefix; a
// wrong secret is refused by the server.
func TestRequestsAreSignedAndPrefixed(t *testing.T) {
	f, srv := newFake(t)
	ctx := context.Background()
	good, err := New(Config{Endpoint: srv.URL, Region: f.region, Bucket: f.bucket, AccessKey: f.accessKey, SecretKey: f.secretKey, PathStyle: true, Prefix: "deploy1/"})
	if err != nil {
		t.Fatal(err)
	}
	if err := good.Put(ctx, "t1/202601/manifest.json", []byte("{}")); err != nil {
		t.Fatalf("signed Put: %v", err)
	}
	if _, ok := f.objects["deploy1/t1/202601/manifest.json"]; !ok || f.signed != 1 {
		t.Fatalf("object not stored under the prefix: %v, %d signed requests", f.objects, f.signed)
	}
	bad, err := New(Config{Endpoint: srv.URL, Region: f.region, Bucket: f.bucket, AccessKey: f.accessKey, SecretKey: "wrong", PathStyle: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := bad.Put(ctx, "t1/x", []byte("x")); err == nil {
		t.Fatal("a request signed with the wrong secret was accepted")
	}
	if _, err := bad.Get(ctx, "deploy1/t1/202601/manifest.json"); err == nil {
		t.Fatal("a read signed with the wrong secret was accepted")
	}
}
