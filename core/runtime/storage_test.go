package runtime

import (
	"context"
	"errors"
	"testing"

	"github.com/imdhq/imd/core/domain/tenant"
)

type fakeStorage struct {
	provisionErr, watermarkErr, clockErr error
	provisioned                          []string
	newest, checked                      int64
}

func (f *fakeStorage) Provision(_ context.Context, name, database, dsn string) error {
	f.provisioned = append(f.provisioned, name+"/"+database+"/"+dsn)
	return f.provisionErr
}

func (f *fakeStorage) MaxMessageID(context.Context, string) (int64, error) {
	return f.newest, f.watermarkErr
}

func (f *fakeStorage) CheckClock(last int64) error {
	f.checked = last
	return f.clockErr
}

func TestReadyStorageProvisionsThenChecksTheClockAgainstTheNewestID(t *testing.T) {
	boom := errors.New("boom")
	for _, tc := range []struct {
		name      string
		fake      fakeStorage
		wantErr   error
		wantCheck int64
	}{
		{"ready", fakeStorage{newest: 42}, nil, 42},
		{"provision fails", fakeStorage{newest: 42, provisionErr: boom}, boom, 0},
		{"watermark fails", fakeStorage{newest: 42, watermarkErr: boom}, boom, 0},
		{"clock behind", fakeStorage{newest: 42, clockErr: boom}, boom, 42},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.fake
			ready := NewReadyStorage(StorageDeps{Databases: &f, Watermarks: &f, Clock: &f})
			err := ready(context.Background(), tenant.Info{Name: "acme", Database: "imd_acme", DSN: "dsn"})
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Fatalf("error %v, want %v", err, tc.wantErr)
			}
			if len(f.provisioned) != 1 || f.provisioned[0] != "acme/imd_acme/dsn" {
				t.Errorf("provisioned %v", f.provisioned)
			}
			if f.checked != tc.wantCheck {
				t.Errorf("clock checked against %d, want %d", f.checked, tc.wantCheck)
			}
		})
	}
}
