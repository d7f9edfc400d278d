package blobfs

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/imdhq/imd/ports"
	"github.com/imdhq/imd/ports/contract"
)

func TestBlobStoreContract(t *testing.T) {
	contract.BlobStore(t, func(t *testing.T) ports.BlobStore {
		s, err := New(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func TestKeysStayInsideTheRoot(t *testing.T) {
	s, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, key := range []string{"../escape", "a/../../b", "/abs", "a//b", "A/upper", "a/./b", "a/.tmp-x", "", "a b"} {
		if err := s.Put(ctx, key, []byte("x")); err == nil {
			t.Errorf("Put %q was accepted", key)
		}
	}
}

func TestDeleteLeavesNoEmptyDirectories(t *testing.T) {
	root := t.TempDir()
	s, err := New(root)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, k := range []string{"t1/202601/grp_1/000001.ndjson.gz", "t1/202602/manifest.json"} {
		if err := s.Put(ctx, k, []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Delete(ctx, "t1/202601/grp_1/000001.ndjson.gz"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "t1", "202601")); !os.IsNotExist(err) {
		t.Fatalf("emptied month directory still there: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "t1", "202602", "manifest.json")); err != nil {
		t.Fatalf("the other month's file went too: %v", err)
	}
}
