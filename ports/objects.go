package ports

import "context"

// BlobStore keeps archive files as whole objects by key (seed 000 §10: archived months move to
// object storage). It is not ObjectStore, which only signs URLs for clients' media: archive
// files are written and read by the server itself. Keys are '/'-separated paths of
// [a-z0-9_./-]; an absent object is archive.ErrNoBlob.
type BlobStore interface {
	// Put stores data under key, replacing whatever was there; it returns once the object is
	// durable.
	Put(ctx context.Context, key string, data []byte) error
	// Get reads a whole object.
	Get(ctx context.Context, key string) ([]byte, error)
	// List returns every key under prefix, ascending.
	List(ctx context.Context, prefix string) ([]string, error)
	// Delete removes an object; an absent one is no error.
	Delete(ctx context.Context, key string) error
}
