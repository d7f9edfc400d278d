// Package blobfs is ports.BlobStore on a local directory, the default home of archive files:
// one file per key under the root, written through a temporary file and renamed, so a reader
// never sees half an object and a crash leaves none behind under its key.
package blobfs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/imdhq/imd/core/domain/archive"
	"github.com/imdhq/imd/ports"
)

// keyRE is the key alphabet of ports.BlobStore; with ".." segments refused it keeps every key
// inside the root.
var keyRE = regexp.MustCompile(`^[a-z0-9_.\-]+(/[a-z0-9_.\-]+)*$`)

// tmpPrefix marks files being written; List skips them.
const tmpPrefix = ".tmp-"

// Store keeps objects under a root directory.
type Store struct {
	root string
}

var _ ports.BlobStore = (*Store)(nil)

// New returns a store rooted at dir, created if missing.
func New(dir string) (*Store, error) {
	if dir == "" {
		return nil, errors.New("blobfs: directory is required")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("blobfs: %w", err)
	}
	if err := os.MkdirAll(abs, 0o750); err != nil {
		return nil, fmt.Errorf("blobfs: create %s: %w", abs, err)
	}
	return &Store{root: abs}, nil
}

// checkKey rejects keys outside the alphabet or with "." or ".." segments.
func checkKey(key string) error {
	if !keyRE.MatchString(key) {
		return fmt.Errorf("invalid object key %q", key)
	}
	for seg := range strings.SplitSeq(key, "/") {
		if seg == "." || seg == ".." || strings.HasPrefix(seg, tmpPrefix) {
			return fmt.Errorf("invalid object key %q", key)
		}
	}
	return nil
}

func (s *Store) file(key string) (string, error) {
	if err := checkKey(key); err != nil {
		return "", err
	}
	return filepath.Join(s.root, filepath.FromSlash(key)), nil
}

// Put writes data to a temporary file beside the target, syncs it, renames it over the target
// and syncs the directory, so the object is durable when Put returns.
func (s *Store) Put(ctx context.Context, key string, data []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	name, err := s.file(key)
	if err != nil {
		return err
	}
	dir := filepath.Dir(name)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("put %s: %w", key, err)
	}
	tmp, err := os.CreateTemp(dir, tmpPrefix+"*")
	if err != nil {
		return fmt.Errorf("put %s: %w", key, err)
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("put %s: %w", key, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("put %s: sync: %w", key, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("put %s: %w", key, err)
	}
	if err := os.Rename(tmp.Name(), name); err != nil {
		return fmt.Errorf("put %s: %w", key, err)
	}
	return syncDir(dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}

// Get reads a whole object.
func (s *Store) Get(ctx context.Context, key string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	name, err := s.file(key)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("get %s: %w", key, archive.ErrNoBlob)
	}
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", key, err)
	}
	return data, nil
}

// List walks the directory that holds prefix and returns the keys under it, ascending.
func (s *Store) List(ctx context.Context, prefix string) ([]string, error) {
	dir := prefix
	if !strings.HasSuffix(dir, "/") {
		dir = path.Dir(dir)
	}
	dir = strings.TrimSuffix(dir, "/")
	start := s.root
	if dir != "" && dir != "." {
		if err := checkKey(dir); err != nil {
			return nil, err
		}
		start = filepath.Join(s.root, filepath.FromSlash(dir))
	}
	var keys []string
	err := filepath.WalkDir(start, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return fs.SkipAll
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if d.IsDir() || strings.HasPrefix(d.Name(), tmpPrefix) {
			return nil
		}
		rel, err := filepath.Rel(s.root, p)
		if err != nil {
			return err
		}
		if key := filepath.ToSlash(rel); strings.HasPrefix(key, prefix) {
			keys = append(keys, key)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", prefix, err)
	}
	sort.Strings(keys)
	return keys, nil
}

// Delete removes an object and the directories it leaves empty.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	name, err := s.file(key)
	if err != nil {
		return err
	}
	if err := os.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("delete %s: %w", key, err)
	}
	// Empty parents go too, so purged months leave no directory skeleton; a non-empty one
	// stops the climb.
	for dir := filepath.Dir(name); dir != s.root && strings.HasPrefix(dir, s.root); dir = filepath.Dir(dir) {
		if os.Remove(dir) != nil {
			break
		}
	}
	return nil
}
