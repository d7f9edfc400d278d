package memory

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/imdhq/imd/core/domain/archive"
	"github.com/imdhq/imd/ports"
)

// BlobStore is ports.BlobStore in memory.
type BlobStore struct {
	mu      sync.Mutex
	objects map[string][]byte
}

var _ ports.BlobStore = (*BlobStore)(nil)

// NewBlobStore returns an empty store.
func NewBlobStore() *BlobStore { return &BlobStore{objects: make(map[string][]byte)} }

func (s *BlobStore) Put(_ context.Context, key string, data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.objects[key] = slices.Clone(data)
	return nil
}

func (s *BlobStore) Get(_ context.Context, key string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	data, ok := s.objects[key]
	if !ok {
		return nil, fmt.Errorf("get %s: %w", key, archive.ErrNoBlob)
	}
	return slices.Clone(data), nil
}

func (s *BlobStore) List(_ context.Context, prefix string) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var keys []string
	for k := range s.objects {
		if strings.HasPrefix(k, prefix) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys, nil
}

func (s *BlobStore) Delete(_ context.Context, key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.objects, key)
	return nil
}

// Corrupt flips a byte of an object, as a damaged disk would; false when there is no object.
func (s *BlobStore) Corrupt(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	data, ok := s.objects[key]
	if !ok || len(data) == 0 {
		return false
	}
	data[len(data)/2] ^= 0xff
	return true
}
