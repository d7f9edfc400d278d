package redis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/redis/rueidis"

	"github.com/imdhq/imd/ports"
)

// Lineage is ports.RedisLineage from INFO: each master's run_id, new at every start of a
// redis-server, and master_replid, new when a replica is promoted (a Sentinel or Cluster
// failover). Replicas are left out: only what a master holds was acknowledged. On a Cluster
// every node the client knows is asked; one that does not answer (a master just killed) is
// left out, and its replacement shows as a new master.
type Lineage struct {
	c rueidis.Client
}

var _ ports.RedisLineage = (*Lineage)(nil)

// NewLineage returns the lineage of the masters c writes to.
func NewLineage(c rueidis.Client) *Lineage { return &Lineage{c: c} }

// Lineage lists every answering master as run_id/master_replid, sorted.
func (l *Lineage) Lineage(ctx context.Context) (string, error) {
	var masters []string
	var errs error
	for addr, node := range l.c.Nodes() {
		// INFO's default sections (server and replication among them): Redis 6.2 takes one
		// section name at most.
		info, err := node.Do(ctx, node.B().Info().Build()).ToString()
		if err != nil {
			errs = errors.Join(errs, fmt.Errorf("info of %s: %w", addr, err))
			continue
		}
		fields := infoFields(info)
		if fields["role"] != "master" {
			continue
		}
		if fields["run_id"] == "" || fields["master_replid"] == "" {
			return "", fmt.Errorf("info of %s: no run_id or master_replid", addr)
		}
		masters = append(masters, fields["run_id"]+"/"+fields["master_replid"])
	}
	if len(masters) == 0 {
		return "", fmt.Errorf("redis lineage: no master answered: %w", errs)
	}
	slices.Sort(masters)
	return strings.Join(masters, ","), nil
}

// infoFields parses INFO's "name:value" lines.
func infoFields(info string) map[string]string {
	out := map[string]string{}
	for line := range strings.Lines(info) {
		if name, value, ok := strings.Cut(strings.TrimSpace(line), ":"); ok && !strings.HasPrefix(name, "#") {
			out[name] = value
		}
	}
	return out
}
