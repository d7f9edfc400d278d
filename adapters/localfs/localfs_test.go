package localfs

import (
	"context"
	"errors"
	"io"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/imdhq/imd/core/domain/objectkey"
	"github.com/imdhq/imd/ports/contract"
)

const key = "acme/7/20300101/0123456789abcdef0123456789abcdef.png"

func newStore(t *testing.T) *Store {
	t.Helper()
	s, err := New(Config{Dir: t.TempDir(), BaseURL: "http://files.test/", Secret: []byte("localfs-secret")})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// signed returns the key and query of a presigned URL.
func signed(t *testing.T, raw string) (string, url.Values) {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	if u.Host != "files.test" || !strings.HasPrefix(u.Path, "/files/") {
		t.Fatalf("URL %s is not under the base URL's /files/", raw)
	}
	return strings.TrimPrefix(u.Path, "/files/"), u.Query()
}

func TestSignedPutThenGet(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	put, err := s.PresignPut(ctx, key, "image/png", 5, time.Now().Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	k, q := signed(t, put)
	tamper := func(name, value string) url.Values {
		c := url.Values{}
		for n, v := range q {
			c[n] = v
		}
		c.Set(name, value)
		return c
	}
	tests := []struct {
		name string
		key  string
		q    url.Values
		ct   string
		body string
		want error
	}{
		{"wrong content type", k, q, "text/html", "hello", ErrBadSignature},
		{"raised size limit", k, tamper("max", "500"), "image/png", "hello", ErrBadSignature},
		{"later expiry", k, tamper("exp", "9999999999"), "image/png", "hello", ErrBadSignature},
		{"another key", "acme/7/20300101/ffffffffffffffffffffffffffffffff.png", q, "image/png", "hello", ErrBadSignature},
		{"a key escaping the directory", "../../etc/passwd", q, "image/png", "hello", ErrBadKey},
		{"no signature", k, url.Values{}, "image/png", "hello", ErrBadSignature},
		{"too large", k, q, "image/png", "hello!", ErrTooLarge},
		{"as signed", k, q, "image/png", "hello", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.Put(tt.key, tt.q, tt.ct, strings.NewReader(tt.body))
			if !errors.Is(err, tt.want) {
				t.Fatalf("Put = %v, want %v", err, tt.want)
			}
		})
	}

	if _, err := s.Open(k, q); !errors.Is(err, ErrBadSignature) {
		t.Fatalf("Open with the PUT signature: %v", err)
	}
	get, err := s.PresignGet(ctx, key, time.Now().Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	gk, gq := signed(t, get)
	f, err := s.Open(gk, gq)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if b, _ := io.ReadAll(f); string(b) != "hello" {
		t.Fatalf("read %q", b)
	}
}

func TestExpiredURLs(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	put, _ := s.PresignPut(ctx, key, "image/png", 5, time.Now().Add(time.Minute))
	get, _ := s.PresignGet(ctx, key, time.Now().Add(time.Minute))
	s.now = func() time.Time { return time.Now().Add(2 * time.Minute) }
	k, q := signed(t, put)
	if err := s.Put(k, q, "image/png", strings.NewReader("x")); !errors.Is(err, ErrExpired) {
		t.Fatalf("expired PUT: %v", err)
	}
	k, q = signed(t, get)
	if _, err := s.Open(k, q); !errors.Is(err, ErrExpired) {
		t.Fatalf("expired GET: %v", err)
	}
}

func TestMissingObject(t *testing.T) {
	s := newStore(t)
	get, _ := s.PresignGet(context.Background(), key, time.Now().Add(time.Minute))
	k, q := signed(t, get)
	if _, err := s.Open(k, q); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Open of a missing object: %v", err)
	}
	if _, err := s.PresignPut(context.Background(), "../x", "image/png", 1, time.Now()); !errors.Is(err, ErrBadKey) {
		t.Fatalf("PresignPut of a bad key: %v", err)
	}
}

func TestObjectStoreContract(t *testing.T) {
	contract.ObjectStore(t, newStore(t), objectkey.Thumb(key, "jpg"))
}
