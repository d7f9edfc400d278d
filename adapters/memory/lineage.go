package memory

import (
	"context"
	"fmt"
	"sync"

	"github.com/imdhq/imd/ports"
)

// RedisLineage is the ports.RedisLineage of the memory fakes: a generation that Replace moves
// on, for a test that fails "Redis" over.
type RedisLineage struct {
	mu  sync.Mutex
	gen int
}

var _ ports.RedisLineage = (*RedisLineage)(nil)

// NewRedisLineage returns the lineage of a "Redis" never replaced.
func NewRedisLineage() *RedisLineage { return &RedisLineage{} }

// Lineage names the current generation.
func (l *RedisLineage) Lineage(context.Context) (string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return fmt.Sprintf("memory-%d", l.gen), nil
}

// Replace stands for a failover or a restart of "Redis": the lineage changes.
func (l *RedisLineage) Replace() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.gen++
}
