package config

import (
	"errors"
	"fmt"
	"time"

	"github.com/imdhq/imd/core/loop/migration"
)

// Migration configures the move of a legacy single table im_group_messages into the month
// tables (seed 000 §9).
type Migration struct {
	// DualRead merges a tenant's legacy table into every read while it has one and its
	// migration is not finished. Turn it on on every node before starting a migration.
	DualRead bool `yaml:"dual_read"`
	// BatchSize is the rows one copy transaction takes, 1000-5000.
	BatchSize int `yaml:"batch_size"`
	// RowsPerSecond caps the copy rate to protect live traffic; 0 is no cap.
	RowsPerSecond int `yaml:"rows_per_second"`
	// PollInterval is how often a node looks for migration work (a job started elsewhere,
	// or one a killed process left).
	PollInterval time.Duration `yaml:"poll_interval"`
	// StatusTTL is how long a node trusts what it read about a tenant's legacy table; finish
	// on one node stops the others' legacy reads within it.
	StatusTTL time.Duration `yaml:"status_ttl"`
}

func defaultMigration() Migration {
	return Migration{BatchSize: 2000, RowsPerSecond: 20_000, PollInterval: 5 * time.Second, StatusTTL: 2 * time.Second}
}

func (m Migration) validate() error {
	var errs []error
	if m.BatchSize < migration.MinBatchSize || m.BatchSize > migration.MaxBatchSize {
		errs = append(errs, fmt.Errorf("migration.batch_size must be %d-%d", migration.MinBatchSize, migration.MaxBatchSize))
	}
	if m.RowsPerSecond < 0 {
		errs = append(errs, errors.New("migration.rows_per_second must not be negative (0 is no cap)"))
	}
	if m.PollInterval <= 0 || m.StatusTTL <= 0 {
		errs = append(errs, errors.New("migration.poll_interval and status_ttl must be positive"))
	}
	return errors.Join(errs...)
}

// RateCap is RowsPerSecond as core/loop/migration takes it, where no cap is negative.
func (m Migration) RateCap() int {
	if m.RowsPerSecond == 0 {
		return -1
	}
	return m.RowsPerSecond
}
