package redis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/redis/rueidis"

	"github.com/imdhq/imd/ports"
)

// CommitFollowUp is ports.CommitFollowUp: a script writes the route update, the hot entry,
// the deliver job, the acked mark and the pending settles of a committed message, with the Lua
// functions it shares with the single-purpose scripts of the route cache and the queue. One
// call carries the parts whose keys share a hash tag, so each is legal on Redis Cluster too.
type CommitFollowUp struct {
	c       rueidis.Client
	queue   *DeliverQueue
	hot     *HotCache
	batches *scriptBatches
	// oneNode: not a cluster, so the keys of any slots may share a script call (DESIGN §11)
	oneNode bool
}

var _ ports.CommitFollowUp = (*CommitFollowUp)(nil)

// NewCommitFollowUp returns the follow-up on queue's client that pushes to queue's partitions,
// as queue.Push would, and caches with hot's limits.
func NewCommitFollowUp(queue *DeliverQueue, hot *HotCache) *CommitFollowUp {
	return &CommitFollowUp{c: queue.c, queue: queue, hot: hot, batches: newScriptBatches(), oneNode: queue.c.Mode() != rueidis.ClientModeCluster}
}

// The parts of a follow-up, in the order of the script's presence flags and of its reply.
const (
	partRoute = iota
	partHot
	partJob
	partAcked
	partSettle
	parts
)

var partNames = [parts]string{"route update", "hot cache write", "deliver job push", "acked mark", "pending settle"}

// followUpScript runs follow-ups, one after another, each the parts its flags ('1' at a
// part's position: present) name, each part in its own pcall, so one part's failure (a key of
// the wrong type) leaves the others written. The acked mark and the settle run only once the
// job, if present, is queued. It returns per follow-up one entry per part: the empty string
// when absent, 'ok', 'skip' (not attempted), or the part's error. The follow-ups of one slot
// group that come together share a call (scriptBatches, issue 30 part 2), and there the
// route ranges of a topic's month merge into one update and a topic's hot entries go in before
// one trim (luaApplyRoute, luaPutHot), both at the end of the call: a failed merged update or
// trim fails that part of each follow-up it was for.
// Per follow-up, ARGV: the flags, its key count and argument count, then its arguments per
// present part in flag order: route (routeUpdateArgs), hot (HotCache.putArgs), job (the job), settle
// (the members to remove, to the follow-up's end); KEYS, in the same order: route (route,
// route_meta), hot (hot), job (partition list), acked (idem), settle (pending).
var followUpScript = rueidis.NewLuaScript(luaDecLess + luaApplyRoute + luaPutHot + luaMarkAcked + `
local function push_job(key, raw) redis.call('RPUSH', key, raw) end
local function settle_marks(key, from, to) redis.call('ZREM', key, unpack(ARGV, from, to)) end
local function outcome(ok, err)
  if ok then return 'ok' end
  if type(err) == 'table' then return tostring(err.err) end
  return tostring(err)
end
-- The merged route updates and the hot trims, each with the replies (and part) it answers for.
-- The functions below are made once per call, so that a follow-up makes no closure and no
-- table of indexes (issue 30 part 2: what a script allocates, Redis's Lua collects again).
local routes, trims, order = {}, {}, {}
local function later(tbl, id, out, part, k, x, first, merge)
  local e = tbl[id]
  if not e then
    e = first(k, x)
    e.outs, e.part = {}, part
    tbl[id] = e
    order[#order + 1] = e
  else
    merge(e, x)
  end
  e.outs[#e.outs + 1] = out
  out[part] = 'ok'
end
local function first_route(r, x)
  return {f = apply_route, args = {KEYS[r], KEYS[r + 1], ARGV[x], ARGV[x + 1], ARGV[x + 2], ARGV[x + 3], ARGV[x + 4], ARGV[x + 5]}}
end
local function merge_route(e, x)
  local g = e.args
  g[4], g[5], g[6], g[7], g[8] = merge_range(g[4], g[5], g[6], g[7], g[8], {ARGV[x + 1], ARGV[x + 2], ARGV[x + 3], ARGV[x + 4], ARGV[x + 5]})
end
local function first_trim(h, x)
  return {f = trim_hot, args = {KEYS[h], ARGV[x + 2], ARGV[x + 3], ARGV[x + 4]}}
end
local function merge_trim(e, x)
  if tonumber(ARGV[x + 2]) > tonumber(e.args[2]) then e.args[2] = ARGV[x + 2] end
end
local ONE = string.byte('1')
local function follow_up(flags, k, a, last)
  local f1, f2, f3, f4, f5 = string.byte(flags, 1, 5)
  local route, hot, job, acked, settle -- each part's first KEYS index, when present
  local route_a, hot_a, job_a, settle_a -- and its first ARGV index
  if f1 == ONE then route, route_a = k, a; k = k + 2; a = a + 6 end
  if f2 == ONE then hot, hot_a = k, a; k = k + 1; a = a + 5 end
  if f3 == ONE then job, job_a = k, a; k = k + 1; a = a + 1 end
  if f4 == ONE then acked = k; k = k + 1 end
  if f5 == ONE then settle, settle_a = k, a end
  local out = {'', '', '', '', ''}
  if job then out[3] = outcome(pcall(push_job, KEYS[job], ARGV[job_a])) end
  local queued = not job or out[3] == 'ok'
  if acked then
    if queued then out[4] = outcome(pcall(mark_acked, KEYS[acked])) else out[4] = 'skip' end
  end
  if settle then
    if queued then out[5] = outcome(pcall(settle_marks, KEYS[settle], settle_a, last)) else out[5] = 'skip' end
  end
  if route then
    later(routes, KEYS[route] .. ' ' .. ARGV[route_a], out, 1, route, route_a, first_route, merge_route)
  end
  if hot then
    out[2] = outcome(pcall(add_hot, KEYS[hot], ARGV[hot_a], ARGV[hot_a + 1]))
    if out[2] == 'ok' then
      later(trims, KEYS[hot], out, 2, hot, hot_a, first_trim, merge_trim)
    end
  end
  return out
end
local results = {}
local k, a = 1, 1
while a <= #ARGV do
  local flags, nk, na = ARGV[a], tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2])
  results[#results + 1] = follow_up(flags, k, a + 3, a + 2 + na)
  k, a = k + nk, a + 3 + na
end
for _, e in ipairs(order) do
  local res = outcome(pcall(e.f, unpack(e.args)))
  for _, out in ipairs(e.outs) do out[e.part] = res end
end
return results
`)

// followUpCall is one followUpScript call: the parts it carries, in flag order, with their
// keys and arguments.
type followUpCall struct {
	tag   string // the hash tag every key of the call carries
	flags []byte
	keys  []string
	args  []string // after the flags
}

// Apply writes f's parts in as few script calls as their slots allow: one on one node, or
// when every key carries one hash tag. On a cluster the topic's parts lie in its slot group, the deliver job in its
// partition's list, which may lie elsewhere (DESIGN §11): then the job goes first, alone, and
// the acked mark and the settle go only once it is queued, as the one-call script orders them;
// the other parts go next, a call per slot. Each part is validated first, so bad
// input fails only its own part, before anything is written; the script's parts then fail
// only on what Redis holds.
func (c *CommitFollowUp) Apply(ctx context.Context, tenant string, f ports.FollowUp) ports.FollowUpResult {
	if _, err := KeysOf(tenant); err != nil {
		return f.Failed(fmt.Errorf("commit follow-up: %w", err))
	}
	var r ports.FollowUpResult
	outcome := [parts]*error{&r.Route, &r.Hot, &r.Job, &r.Acked, &r.Settle}
	var keys [parts][]string
	var args [parts][]string
	var sent [parts]bool
	add := func(part int, k []string, a []string) {
		sent[part], keys[part], args[part] = true, k, a
	}
	if f.Route != nil {
		k, a, err := routeUpdateArgs(tenant, *f.Route)
		if err != nil {
			r.Route = err
		} else {
			add(partRoute, k, a)
		}
	}
	if f.Hot != nil {
		key, a, cache, err := c.hot.putArgs(tenant, *f.Hot)
		r.Hot = err
		if cache {
			add(partHot, []string{key}, a)
		}
	}
	if f.Job != nil {
		job := *f.Job
		job.Tenant = tenant
		key, raw, err := c.queue.pushArgs(job)
		if err != nil {
			r.Job = err
		} else {
			add(partJob, []string{key}, []string{raw})
		}
	}
	if a := f.Acked; a != nil {
		switch k, err := topicKeys(tenant, a.Topic); {
		case r.Job != nil:
			r.Acked = ports.ErrNotAttempted
		case err != nil:
			r.Acked = fmt.Errorf("mark acked: %w", err)
		default:
			add(partAcked, []string{k.Idem(a.Topic, a.From, a.ClientMsgID)}, nil)
		}
	}
	if s := f.Settle; s != nil {
		switch k, err := topicKeys(tenant, s.Topic); {
		case r.Job != nil:
			r.Settle = ports.ErrNotAttempted
		case err != nil:
			r.Settle = fmt.Errorf("settle seqs: %w", err)
		case len(s.Seqs) > 0: // nothing to settle otherwise
			members := make([]string, len(s.Seqs))
			for i, n := range s.Seqs {
				members[i] = pendingMember(n, s.Attempt)
			}
			add(partSettle, []string{k.Pending(s.Topic)}, members)
		}
	}
	// calls groups the parts still to write by hash tag, in flag order, the first call first.
	calls := func(only func(part int) bool) []*followUpCall {
		var out []*followUpCall
		for i := range parts {
			if !sent[i] || !only(i) {
				continue
			}
			tag := c.slot(tenant, keys[i][0])
			j := slices.IndexFunc(out, func(c *followUpCall) bool { return c.tag == tag })
			if j < 0 {
				out = append(out, &followUpCall{tag: tag, flags: []byte("00000")})
				j = len(out) - 1
			}
			out[j].flags[i] = '1'
			out[j].keys, out[j].args = append(out[j].keys, keys[i]...), append(out[j].args, args[i]...)
		}
		return out
	}
	// run writes the calls one after another (a follow-up's parts span two slots at most in
	// practice), each in the next script call of its slot, which the follow-ups of other sends
	// there may share, and records each sent part's outcome.
	run := func(batch []*followUpCall) {
		for _, call := range batch {
			args := append([]string{string(call.flags), strconv.Itoa(len(call.keys)), strconv.Itoa(len(call.args))}, call.args...)
			reply, err := c.batches.do(ctx, call.tag, newBatchedCall(call.keys, args), scriptExec(c.c, followUpScript))
			if err == nil && len(reply) != parts {
				err = fmt.Errorf("script reply has %d entries, want %d", len(reply), parts)
			}
			for p := range parts {
				if call.flags[p] != '1' {
					continue
				}
				switch {
				case err != nil:
					*outcome[p] = fmt.Errorf("%s after commit in %s: %w", partNames[p], tenant, err)
				case reply[p] == "ok":
				case reply[p] == "skip":
					*outcome[p] = ports.ErrNotAttempted
				default:
					*outcome[p] = fmt.Errorf("%s after commit in %s: %w", partNames[p], tenant, errors.New(reply[p]))
				}
			}
		}
	}
	all := calls(func(int) bool { return true })
	if !sent[partJob] || len(all) == 1 {
		run(all)
		return r
	}
	run(calls(func(p int) bool { return p == partJob }))
	if r.Job != nil {
		for _, p := range []int{partAcked, partSettle} {
			if sent[p] {
				sent[p], *outcome[p] = false, ports.ErrNotAttempted
			}
		}
	}
	run(calls(func(p int) bool { return p != partJob }))
	return r
}

// slot is the batch key of a call that writes key: its hash tag on a cluster; on one node,
// where the slot groups share one main thread, the tenant, so that a follow-up is one call
// and the follow-ups of all of a tenant's groups that meet in flight share it.
func (c *CommitFollowUp) slot(tenant, key string) string {
	if c.oneNode {
		return tenant
	}
	return hashTag(key)
}

// hashTag is the part of a key Redis Cluster hashes: between the first '{' and the next '}'
// when not empty, else the whole key.
func hashTag(key string) string {
	if open := strings.IndexByte(key, '{'); open >= 0 {
		if end := strings.IndexByte(key[open+1:], '}'); end > 0 {
			return key[open+1 : open+1+end]
		}
	}
	return key
}
