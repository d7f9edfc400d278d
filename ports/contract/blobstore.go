package contract

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/imdhq/imd/core/domain/archive"
	"github.com/imdhq/imd/ports"
)

// BlobStore runs the blob store contract: whole objects by key, replaced by a second Put,
// listed by prefix in key order, deleted idempotently.
func BlobStore(t *testing.T, newStore func(t *testing.T) ports.BlobStore) {
	cases := []struct {
		name string
		run  func(t *testing.T, s ports.BlobStore)
	}{
		{"put then get returns the same bytes", blobRoundTrip},
		{"absent object is ErrNoBlob", blobAbsent},
		{"put replaces the object", blobReplace},
		{"list returns the keys under a prefix in order", blobList},
		{"delete removes and is idempotent", blobDelete},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.run(t, newStore(t)) })
	}
}

func blobRoundTrip(t *testing.T, s ports.BlobStore) {
	ctx := context.Background()
	data := bytes.Repeat([]byte{0, 1, 2, 0xff, 'x'}, 300_000) // 1.5 MB, binary
	for _, tc := range []struct {
		key  string
		data []byte
	}{
		{"t1/202601/manifest.json", []byte(`{"format":"x"}`)},
		{"t1/202601/grp_1/000001.ndjson.gz", data},
		{"t1/202601/grp_1/empty", []byte{}},
	} {
		if err := s.Put(ctx, tc.key, tc.data); err != nil {
			t.Fatalf("Put %s: %v", tc.key, err)
		}
		got, err := s.Get(ctx, tc.key)
		if err != nil {
			t.Fatalf("Get %s: %v", tc.key, err)
		}
		if !bytes.Equal(got, tc.data) {
			t.Fatalf("Get %s: %d bytes back, %d put", tc.key, len(got), len(tc.data))
		}
	}
}

func blobAbsent(t *testing.T, s ports.BlobStore) {
	if _, err := s.Get(context.Background(), "t1/none/manifest.json"); !errors.Is(err, archive.ErrNoBlob) {
		t.Fatalf("Get of an absent key: %v, want archive.ErrNoBlob", err)
	}
}

func blobReplace(t *testing.T, s ports.BlobStore) {
	ctx := context.Background()
	for _, v := range []string{"first version, longer", "second"} {
		if err := s.Put(ctx, "t1/k", []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.Get(ctx, "t1/k")
	if err != nil || string(got) != "second" {
		t.Fatalf("Get after replace: %q %v", got, err)
	}
}

func blobList(t *testing.T, s ports.BlobStore) {
	ctx := context.Background()
	keys := []string{"t1/202602/grp_2/000001.ndjson.gz", "t1/202601/manifest.json", "t1/202601/grp_1/000002.ndjson.gz",
		"t1/202601/grp_1/000001.ndjson.gz", "t2/202601/manifest.json"}
	for _, k := range keys {
		if err := s.Put(ctx, k, []byte(k)); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		prefix string
		want   []string
	}{
		{"t1/202601/", []string{"t1/202601/grp_1/000001.ndjson.gz", "t1/202601/grp_1/000002.ndjson.gz", "t1/202601/manifest.json"}},
		{"t1/202601/grp_1/", []string{"t1/202601/grp_1/000001.ndjson.gz", "t1/202601/grp_1/000002.ndjson.gz"}},
		{"t1/", []string{"t1/202601/grp_1/000001.ndjson.gz", "t1/202601/grp_1/000002.ndjson.gz", "t1/202601/manifest.json", "t1/202602/grp_2/000001.ndjson.gz"}},
		{"t1/2026", []string{"t1/202601/grp_1/000001.ndjson.gz", "t1/202601/grp_1/000002.ndjson.gz", "t1/202601/manifest.json", "t1/202602/grp_2/000001.ndjson.gz"}},
		{"t3/", nil},
	} {
		got, err := s.List(ctx, tc.prefix)
		if err != nil {
			t.Fatalf("List %q: %v", tc.prefix, err)
		}
		if !slices.Equal(got, tc.want) {
			t.Fatalf("List %q = %v, want %v", tc.prefix, got, tc.want)
		}
	}
}

func blobDelete(t *testing.T, s ports.BlobStore) {
	ctx := context.Background()
	if err := s.Put(ctx, "t1/202601/grp_1/000001.ndjson.gz", []byte("x")); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := s.Delete(ctx, "t1/202601/grp_1/000001.ndjson.gz"); err != nil {
			t.Fatalf("Delete: %v", err)
		}
	}
	if _, err := s.Get(ctx, "t1/202601/grp_1/000001.ndjson.gz"); !errors.Is(err, archive.ErrNoBlob) {
		t.Fatalf("Get after Delete: %v", err)
	}
	if got, err := s.List(ctx, "t1/"); err != nil || len(got) != 0 {
		t.Fatalf("List after Delete: %v %v", got, err)
	}
}
