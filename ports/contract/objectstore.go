package contract

import (
	"bytes"
	"context"
	"testing"

	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/ports"
)

// ObjectStore runs the contract of the server's own reads and writes of media objects (issue
// 32): what WriteObject stored ReadObject returns, an absent key is apperr.NotFound, an object
// past the limit apperr.TooLarge, and a second write replaces the first. key must be an issued
// key of the store's shape (core/domain/objectkey).
func ObjectStore(t *testing.T, s ports.ObjectStore, key string) {
	ctx := context.Background()
	if _, err := s.ReadObject(ctx, key, 1<<20); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("ReadObject of an absent key: %v, want NotFound", err)
	}
	for _, data := range [][]byte{bytes.Repeat([]byte{0xff, 0xd8, 0, 'x'}, 50_000), []byte("second")} {
		if err := s.WriteObject(ctx, key, "image/jpeg", data); err != nil {
			t.Fatalf("WriteObject: %v", err)
		}
		got, err := s.ReadObject(ctx, key, int64(len(data)))
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("ReadObject at the limit: %d bytes, %v; want the %d written", len(got), err, len(data))
		}
		if _, err := s.ReadObject(ctx, key, int64(len(data))-1); apperr.CodeOf(err) != apperr.TooLarge {
			t.Fatalf("ReadObject past the limit: %v, want TooLarge", err)
		}
	}
}
