package memory

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/ports"
)

// ObjectStore is ports.ObjectStore in memory: its URLs are fake (memory://op/key) and it
// keeps the objects the server writes and what a test puts as a client's upload.
type ObjectStore struct {
	mu      sync.Mutex
	objects map[string][]byte
}

var _ ports.ObjectStore = (*ObjectStore)(nil)

// NewObjectStore returns an empty store.
func NewObjectStore() *ObjectStore { return &ObjectStore{objects: make(map[string][]byte)} }

func (s *ObjectStore) PresignPut(_ context.Context, key, _ string, _ int64, _ time.Time) (string, error) {
	return "memory://put/" + key, nil
}

func (s *ObjectStore) PresignGet(_ context.Context, key string, _ time.Time) (string, error) {
	return "memory://get/" + key, nil
}

func (s *ObjectStore) ReadObject(_ context.Context, key string, limit int64) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	data, ok := s.objects[key]
	switch {
	case !ok:
		return nil, apperr.New(apperr.NotFound, "no such object")
	case int64(len(data)) > limit:
		return nil, apperr.New(apperr.TooLarge, "object larger than the limit")
	}
	return slices.Clone(data), nil
}

func (s *ObjectStore) WriteObject(_ context.Context, key, _ string, data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.objects[key] = slices.Clone(data)
	return nil
}
