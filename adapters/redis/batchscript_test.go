package redis

import (
	"context"
	"testing"

	"github.com/redis/rueidis"
)

// A node that never saw the script (restarted, promoted, flushed) answers NOSCRIPT; ExecBatch
// sends those calls again as EVAL and answers every call in order, and the next batch finds the
// script cached.
func TestBatchScriptLoadsWhereMissing(t *testing.T) {
	onEachRedis(t, func(t *testing.T, c rueidis.Client) {
		ctx := context.Background()
		k, err := KeysOf(testTenant(t, c))
		if err != nil {
			t.Fatal(err)
		}
		// A body no node has cached: the test's own key prefix is in it.
		s := newBatchScript("-- " + k.prefix + "\nreturn redis.call('INCR', KEYS[1])")
		var calls []rueidis.LuaExec
		for g := range 3 {
			calls = append(calls, rueidis.LuaExec{Keys: []string{k.Group(g).prefix + "batch"}})
		}
		for round := int64(1); round <= 2; round++ {
			for i, r := range s.ExecBatch(ctx, c, calls) {
				if n, err := r.AsInt64(); err != nil || n != round {
					t.Fatalf("round %d, call %d: %d, %v; want %d", round, i, n, err, round)
				}
			}
		}
	})
}
