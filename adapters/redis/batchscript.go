package redis

import (
	"context"
	"crypto/sha1" // the name Redis gives a script, not a security hash
	"encoding/hex"

	"github.com/redis/rueidis"
)

// batchScript is a Lua script the adapter runs many calls of at once, one call per slot group
// (DESIGN §11), in one round trip. rueidis' ExecMulti would first SCRIPT LOAD it on every node
// through a client pinned to that node's connection of the moment, retrying for as long as the
// context lives: when a master has just been killed and Sentinel or the cluster then promotes
// its replica, the load keeps knocking at the dead connection, and the caller (a deliver
// worker, whose work context never ends) stops for good, its partition's lists with it (e2e
// TestRedisSentinelFailoverLosesNoMessage). ExecBatch sends EVALSHA through the client's own
// routing instead, which follows the promotion, and sends again as EVAL only the calls a node
// answered NOSCRIPT (one restarted, promoted or flushed): EVAL caches the script there too.
type batchScript struct {
	*rueidis.Lua // Exec, for a single call
	body, sha1   string
}

func newBatchScript(body string) *batchScript {
	sum := sha1.Sum([]byte(body))
	return &batchScript{Lua: rueidis.NewLuaScript(body), body: body, sha1: hex.EncodeToString(sum[:])}
}

// ExecBatch runs every call, each on the node its keys live on, and answers them in order.
func (s *batchScript) ExecBatch(ctx context.Context, c rueidis.Client, calls []rueidis.LuaExec) []rueidis.RedisResult {
	if len(calls) == 1 {
		return []rueidis.RedisResult{s.Exec(ctx, c, calls[0].Keys, calls[0].Args)}
	}
	cmds := make(rueidis.Commands, len(calls))
	for i, e := range calls {
		cmds[i] = c.B().Evalsha().Sha1(s.sha1).Numkeys(int64(len(e.Keys))).Key(e.Keys...).Arg(e.Args...).Build()
	}
	results := c.DoMulti(ctx, cmds...)
	var missing []int
	for i, r := range results {
		if err, ok := rueidis.IsRedisErr(r.Error()); ok && err.IsNoScript() {
			missing = append(missing, i)
		}
	}
	if len(missing) == 0 {
		return results
	}
	evals := make(rueidis.Commands, len(missing))
	for j, i := range missing {
		e := calls[i]
		evals[j] = c.B().Eval().Script(s.body).Numkeys(int64(len(e.Keys))).Key(e.Keys...).Arg(e.Args...).Build()
	}
	for j, r := range c.DoMulti(ctx, evals...) {
		results[missing[j]] = r
	}
	return results
}
