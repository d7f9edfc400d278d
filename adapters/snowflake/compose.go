package snowflake

import (
	"fmt"
	"time"
)

// Compose builds the id the generator would have issued at t with the given sequence and
// machine id, e.g. for test data that must look like it came from an earlier deployment.
func (g *Generator) Compose(t time.Time, sequence, machineID int) (int64, error) {
	id, err := g.sf.Compose(t, sequence, machineID)
	if err != nil {
		return 0, fmt.Errorf("snowflake: compose id at %s: %w", t.UTC().Format(time.RFC3339Nano), err)
	}
	return id, nil
}
