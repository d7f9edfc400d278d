package redis

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/imdhq/imd/core/domain/presence"
	"github.com/imdhq/imd/ports"
)

// retireBatch bounds the presence entries one round trip of Retire removes.
const retireBatch = 500

// Nodes is ports.NodeLeases, ports.Presence and ports.NodeChannel on the keys of
// keys_nodes.go: the node ZSET, one presence HASH per user, one devices SET and one push
// STREAM per node instance.
type Nodes struct{ c rueidis.Client }

var (
	_ ports.NodeLeases  = (*Nodes)(nil)
	_ ports.Presence    = (*Nodes)(nil)
	_ ports.NodeChannel = (*Nodes)(nil)
)

// NewNodes returns the node registry on c.
func NewNodes(c rueidis.Client) *Nodes { return &Nodes{c: c} }

func nodeKeys(tenant, node string) (Keys, error) {
	k, err := KeysOf(tenant)
	if err != nil {
		return Keys{}, err
	}
	if !presence.ValidNode(node) {
		return Keys{}, fmt.Errorf("invalid node instance %q", node)
	}
	return k, nil
}

// renewScript scores ARGV[1] with Redis's now + ARGV[2] ms and returns the live members, up
// to 100 expired ones and 1 if ARGV[1] had no running lease before. KEYS: nodes.
var renewScript = rueidis.NewLuaScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local was = redis.call('ZSCORE', KEYS[1], ARGV[1])
local lapsed = 0
if not was or tonumber(was) < now then lapsed = 1 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
return {redis.call('ZRANGEBYSCORE', KEYS[1], now, '+inf'),
        redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(' .. now, 'LIMIT', 0, 100), lapsed}
`)

// Renew implements ports.NodeLeases with Redis TIME, so node clocks never decide liveness.
func (n *Nodes) Renew(ctx context.Context, tenant, node string, ttl time.Duration) (live, expired []string, lapsed bool, err error) {
	k, err := nodeKeys(tenant, node)
	if err != nil {
		return nil, nil, false, fmt.Errorf("renew node lease: %w", err)
	}
	res, err := renewScript.Exec(ctx, n.c, []string{k.Nodes()}, []string{node, strconv.FormatInt(max(ttl.Milliseconds(), 1), 10)}).ToArray()
	if err == nil && len(res) != 3 {
		err = fmt.Errorf("answer of %d parts", len(res))
	}
	if err != nil {
		return nil, nil, false, fmt.Errorf("renew lease of node %s in %s: %w", node, tenant, err)
	}
	var was int64
	if live, err = res[0].AsStrSlice(); err == nil {
		if expired, err = res[1].AsStrSlice(); err == nil {
			was, err = res[2].AsInt64()
		}
	}
	if err != nil {
		return nil, nil, false, fmt.Errorf("renew lease of node %s in %s: %w", node, tenant, err)
	}
	return live, expired, was == 1, nil
}

// mendScript keeps the wholeness mark KEYS[1] and the heal end KEYS[2] by Redis TIME
// (ports.NodeLeases.Mend): ARGV[1] the lease ms, ARGV[2] known, ARGV[3] owes; it answers 1
// when the registry is whole.
var mendScript = rueidis.NewLuaScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local heal = tonumber(redis.call('GET', KEYS[2]) or '0')
if ARGV[3] == '1' then
  redis.call('DEL', KEYS[1])
  redis.call('SET', KEYS[2], math.max(heal, now + tonumber(ARGV[1])))
  return 0
end
if redis.call('EXISTS', KEYS[1]) == 1 then return 1 end
if heal == 0 and ARGV[2] == '0' or heal > 0 and now >= heal then
  redis.call('SET', KEYS[1], '1')
  redis.call('DEL', KEYS[2])
  return 1
end
if heal == 0 then redis.call('SET', KEYS[2], now + tonumber(ARGV[1])) end
return 0
`)

// Mend implements ports.NodeLeases.
func (n *Nodes) Mend(ctx context.Context, tenant string, ttl time.Duration, known, owes bool) (bool, error) {
	k, err := KeysOf(tenant)
	if err != nil {
		return false, fmt.Errorf("mend presence registry: %w", err)
	}
	whole, err := mendScript.Exec(ctx, n.c, []string{k.PresenceWhole(), k.PresenceHeal()},
		[]string{strconv.FormatInt(max(ttl.Milliseconds(), 1), 10), flag(known), flag(owes)}).AsInt64()
	if err != nil {
		return false, fmt.Errorf("mend presence registry of %s: %w", tenant, err)
	}
	return whole == 1, nil
}

// releasePresenceScript deletes field ARGV[1] of KEYS[1] if its value is ARGV[2], and always drops
// ARGV[3] from the node's devices KEYS[2]: the node no longer holds that device.
var releasePresenceScript = rueidis.NewLuaScript(`
if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then redis.call('HDEL', KEYS[1], ARGV[1]) end
redis.call('SREM', KEYS[2], ARGV[3])
return 1
`)

// retireScript removes the value-prefix-ARGV[2] entry of field ARGV[1] in KEYS[1] (whatever
// token: the node is gone) and answers 1 if it did, so of two nodes retiring at once only one
// reports the user.
var retireScript = newBatchScript(`
local v = redis.call('HGET', KEYS[1], ARGV[1])
if v and string.sub(v, 1, #ARGV[2]) == ARGV[2] then redis.call('HDEL', KEYS[1], ARGV[1]) return 1 end
return 0
`)

// Retire implements ports.NodeLeases: the node's presence entries go first, then its devices
// sets, channel and lease, so a crash half-way leaves the lease to find it by again. Each
// round reads a page of every slot group's devices set in one round trip.
func (n *Nodes) Retire(ctx context.Context, tenant, node string) ([]int64, error) {
	k, err := nodeKeys(tenant, node)
	if err != nil {
		return nil, fmt.Errorf("retire node: %w", err)
	}
	removed := map[int64]bool{}
	for {
		pages := make(rueidis.Commands, SlotGroups)
		for g := range SlotGroups {
			pages[g] = n.c.B().Srandmember().Key(k.NodeDevices(node, g)).Count(retireBatch).Build()
		}
		var (
			execs []rueidis.LuaExec
			users []int64 // users[i]: the user of execs[i]
			srems rueidis.Commands
		)
		for g, r := range n.c.DoMulti(ctx, pages...) {
			members, err := r.AsStrSlice()
			if err != nil {
				return nil, fmt.Errorf("retire node %s in %s: %w", node, tenant, err)
			}
			if len(members) == 0 {
				continue
			}
			for _, m := range members {
				user, device, ok := strings.Cut(m, ":")
				if uid, err := strconv.ParseInt(user, 10, 64); ok && err == nil {
					execs = append(execs, rueidis.LuaExec{Keys: []string{k.Presence(uid)}, Args: []string{device, node + "|"}})
					users = append(users, uid)
				}
			}
			srems = append(srems, n.c.B().Srem().Key(k.NodeDevices(node, g)).Member(members...).Build())
		}
		if len(srems) == 0 {
			break
		}
		results := retireScript.ExecBatch(ctx, n.c, execs)
		for i, r := range results {
			if did, err := r.AsInt64(); err != nil {
				return nil, fmt.Errorf("retire presence of node %s in %s: %w", node, tenant, err)
			} else if did == 1 {
				removed[users[i]] = true
			}
		}
		for _, r := range n.c.DoMulti(ctx, srems...) {
			if err := r.Error(); err != nil {
				return nil, fmt.Errorf("retire presence of node %s in %s: %w", node, tenant, err)
			}
		}
	}
	cmds := make(rueidis.Commands, 0, SlotGroups+2)
	for g := range SlotGroups {
		cmds = append(cmds, n.c.B().Del().Key(k.NodeDevices(node, g)).Build())
	}
	cmds = append(cmds, n.c.B().Del().Key(k.NodeChannel(node)).Build(), n.c.B().Zrem().Key(k.Nodes()).Member(node).Build())
	for _, r := range n.c.DoMulti(ctx, cmds...) {
		if err := r.Error(); err != nil {
			return nil, fmt.Errorf("retire node %s in %s: %w", node, tenant, err)
		}
	}
	return slices.Sorted(maps.Keys(removed)), nil
}

// claimScript sets field ARGV[1] of KEYS[1] to ARGV[2], adds ARGV[3] to the node's devices
// KEYS[2] and returns the value it replaced.
var claimScript = rueidis.NewLuaScript(`
local old = redis.call('HGET', KEYS[1], ARGV[1])
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('SADD', KEYS[2], ARGV[3])
return old
`)

// Claim implements ports.Presence. A malformed value it replaces counts as none.
func (n *Nodes) Claim(ctx context.Context, tenant string, e presence.Entry) (presence.Entry, bool, error) {
	k, err := nodeKeys(tenant, e.Node)
	if err != nil {
		return presence.Entry{}, false, fmt.Errorf("claim presence: %w", err)
	}
	field := strconv.FormatUint(e.Device, 10)
	old, err := claimScript.Exec(ctx, n.c, []string{k.Presence(e.User), k.NodeDevices(e.Node, UserGroup(e.User))},
		[]string{field, e.Value(), itoa(e.User) + ":" + field}).ToString()
	if rueidis.IsRedisNil(err) {
		return presence.Entry{}, false, nil
	}
	if err != nil {
		return presence.Entry{}, false, fmt.Errorf("claim presence of %d/%d in %s: %w", e.User, e.Device, tenant, err)
	}
	prev, err := presence.ParseValue(e.User, e.Device, old)
	if err != nil {
		return presence.Entry{}, false, nil
	}
	return prev, true, nil
}

// Release implements ports.Presence.
func (n *Nodes) Release(ctx context.Context, tenant string, e presence.Entry) error {
	k, err := nodeKeys(tenant, e.Node)
	if err != nil {
		return fmt.Errorf("release presence: %w", err)
	}
	field := strconv.FormatUint(e.Device, 10)
	err = releasePresenceScript.Exec(ctx, n.c, []string{k.Presence(e.User), k.NodeDevices(e.Node, UserGroup(e.User))},
		[]string{field, e.Value(), itoa(e.User) + ":" + field}).Error()
	if err != nil {
		return fmt.Errorf("release presence of %d/%d in %s: %w", e.User, e.Device, tenant, err)
	}
	return nil
}

// restoreScript sets field ARGV[1] of KEYS[1] to ARGV[2] unless the field exists, adds ARGV[3]
// to the node's devices KEYS[2] if it set it, and answers 1 if it did.
var restoreScript = newBatchScript(`
if redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2]) == 0 then return 0 end
redis.call('SADD', KEYS[2], ARGV[3])
return 1
`)

// Restore implements ports.Presence in one round trip per node the keys live on.
func (n *Nodes) Restore(ctx context.Context, tenant string, entries []presence.Entry) (int, error) {
	if len(entries) == 0 {
		return 0, nil
	}
	k, err := nodeKeys(tenant, entries[0].Node)
	if err != nil {
		return 0, fmt.Errorf("restore presence: %w", err)
	}
	execs := make([]rueidis.LuaExec, len(entries))
	for i, e := range entries {
		if e.Node != entries[0].Node {
			return 0, fmt.Errorf("restore presence in %s: entries of nodes %s and %s", tenant, entries[0].Node, e.Node)
		}
		field := strconv.FormatUint(e.Device, 10)
		execs[i] = rueidis.LuaExec{Keys: []string{k.Presence(e.User), k.NodeDevices(e.Node, UserGroup(e.User))},
			Args: []string{field, e.Value(), itoa(e.User) + ":" + field}}
	}
	restored := 0
	for i, r := range restoreScript.ExecBatch(ctx, n.c, execs) {
		did, err := r.AsInt64()
		if err != nil {
			return restored, fmt.Errorf("restore presence of %d/%d in %s: %w", entries[i].User, entries[i].Device, tenant, err)
		}
		restored += int(did)
	}
	return restored, nil
}

// Entries implements ports.Presence: the node's devices sets of every slot group in one round
// trip, then the field of each device in another; a field that names another node now (a
// newer claim) or is gone is left out.
func (n *Nodes) Entries(ctx context.Context, tenant, node string) ([]presence.Entry, error) {
	k, err := nodeKeys(tenant, node)
	if err != nil {
		return nil, fmt.Errorf("entries of node: %w", err)
	}
	sets := make(rueidis.Commands, SlotGroups)
	for g := range SlotGroups {
		sets[g] = n.c.B().Smembers().Key(k.NodeDevices(node, g)).Build()
	}
	var (
		gets    rueidis.Commands
		devices []presence.Entry // devices[i]: the user and device of gets[i]
	)
	for _, r := range n.c.DoMulti(ctx, sets...) {
		members, err := r.AsStrSlice()
		if err != nil {
			return nil, fmt.Errorf("entries of node %s in %s: %w", node, tenant, err)
		}
		for _, m := range members {
			user, device, ok := strings.Cut(m, ":")
			uid, uerr := strconv.ParseInt(user, 10, 64)
			did, derr := strconv.ParseUint(device, 10, 64)
			if ok && uerr == nil && derr == nil {
				gets = append(gets, n.c.B().Hget().Key(k.Presence(uid)).Field(device).Build())
				devices = append(devices, presence.Entry{User: uid, Device: did})
			}
		}
	}
	if len(gets) == 0 {
		return nil, nil
	}
	var out []presence.Entry
	for i, r := range n.c.DoMulti(ctx, gets...) {
		v, err := r.ToString()
		if rueidis.IsRedisNil(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("entries of node %s in %s: %w", node, tenant, err)
		}
		if e, err := presence.ParseValue(devices[i].User, devices[i].Device, v); err == nil && e.Node == node {
			out = append(out, e)
		}
	}
	return out, nil
}

// Lookup implements ports.Presence with one HGETALL per user, in one round trip.
func (n *Nodes) Lookup(ctx context.Context, tenant string, users []int64) ([]presence.Entry, error) {
	k, err := KeysOf(tenant)
	if err != nil {
		return nil, fmt.Errorf("look presence up: %w", err)
	}
	if len(users) == 0 {
		return nil, nil
	}
	return parseLookup(tenant, users, n.c.DoMulti(ctx, lookupCommands(n.c, k, users)...))
}

// LookupWhole implements ports.Presence: the mark's EXISTS rides in the lookup's pipeline,
// after the entries (on one Redis it runs after them, so whole means no loss came first), to
// save presence queries a round trip (issue 31).
func (n *Nodes) LookupWhole(ctx context.Context, tenant string, users []int64) ([]presence.Entry, bool, error) {
	k, err := KeysOf(tenant)
	if err != nil {
		return nil, false, fmt.Errorf("look presence up: %w", err)
	}
	cmds := append(lookupCommands(n.c, k, users), n.c.B().Exists().Key(k.PresenceWhole()).Build())
	replies := n.c.DoMulti(ctx, cmds...)
	found, err := replies[len(users)].AsInt64()
	if err != nil {
		return nil, false, fmt.Errorf("presence registry of %s: %w", tenant, err)
	}
	out, err := parseLookup(tenant, users, replies[:len(users)])
	return out, found == 1, err
}

// lookupCommands reads users' presence hashes, with room for one command more.
func lookupCommands(c rueidis.Client, k Keys, users []int64) rueidis.Commands {
	cmds := make(rueidis.Commands, len(users), len(users)+1)
	for i, u := range users {
		cmds[i] = c.B().Hgetall().Key(k.Presence(u)).Build()
	}
	return cmds
}

// parseLookup reads the HGETALL replies of users' presence hashes.
func parseLookup(tenant string, users []int64, replies []rueidis.RedisResult) ([]presence.Entry, error) {
	var out []presence.Entry
	for i, r := range replies {
		fields, err := r.AsStrMap()
		if err != nil {
			return nil, fmt.Errorf("look presence of %d up in %s: %w", users[i], tenant, err)
		}
		for f, v := range fields {
			device, err := strconv.ParseUint(f, 10, 64)
			if err != nil {
				continue
			}
			if e, err := presence.ParseValue(users[i], device, v); err == nil {
				out = append(out, e)
			}
		}
	}
	return out, nil
}

// sendScript appends ARGV[3..] to the stream KEYS[1] unless it holds ARGV[1] entries or more;
// ARGV[2] caps its length should a reader stop removing what it read.
var sendScript = rueidis.NewLuaScript(`
if redis.call('XLEN', KEYS[1]) >= tonumber(ARGV[1]) then return 0 end
for i = 3, #ARGV do
  redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[2], '*', 'b', ARGV[i])
end
return 1
`)

// Send implements ports.NodeChannel.
func (n *Nodes) Send(ctx context.Context, tenant, node string, limit int, bodies ...[]byte) (bool, error) {
	k, err := nodeKeys(tenant, node)
	if err != nil {
		return false, fmt.Errorf("send to node: %w", err)
	}
	if len(bodies) == 0 {
		return true, nil
	}
	args := make([]string, 0, 2+len(bodies))
	args = append(args, strconv.Itoa(max(limit, 1)), strconv.Itoa(2*max(limit, 1)))
	for _, b := range bodies {
		args = append(args, string(b))
	}
	sent, err := sendScript.Exec(ctx, n.c, []string{k.NodeChannel(node)}, args).AsInt64()
	if err != nil {
		return false, fmt.Errorf("send to node %s in %s: %w", node, tenant, err)
	}
	return sent == 1, nil
}

// Receive implements ports.NodeChannel with XREAD BLOCK (rueidis gives blocking commands
// connections of their own).
func (n *Nodes) Receive(ctx context.Context, tenant, node, after string, count int, wait time.Duration) ([]ports.NodeMessage, error) {
	k, err := nodeKeys(tenant, node)
	if err != nil {
		return nil, fmt.Errorf("receive for node: %w", err)
	}
	if after == "" {
		after = "0"
	}
	key := k.NodeChannel(node)
	streams, err := n.c.Do(ctx, n.c.B().Xread().Count(int64(max(count, 1))).Block(max(wait.Milliseconds(), 1)).
		Streams().Key(key).Id(after).Build()).AsXRead()
	if rueidis.IsRedisNil(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("receive for node %s in %s: %w", node, tenant, err)
	}
	entries := streams[key]
	out := make([]ports.NodeMessage, 0, len(entries))
	for _, e := range entries {
		out = append(out, ports.NodeMessage{ID: e.ID, Body: []byte(e.FieldValues["b"])})
	}
	return out, nil
}

// Remove implements ports.NodeChannel.
func (n *Nodes) Remove(ctx context.Context, tenant, node string, ids ...string) error {
	k, err := nodeKeys(tenant, node)
	if err != nil {
		return fmt.Errorf("remove from node channel: %w", err)
	}
	if len(ids) == 0 {
		return nil
	}
	if err := n.c.Do(ctx, n.c.B().Xdel().Key(k.NodeChannel(node)).Id(ids...).Build()).Error(); err != nil {
		return fmt.Errorf("remove from channel of node %s in %s: %w", node, tenant, err)
	}
	return nil
}

var _ ports.NodeInspector = (*Nodes)(nil)

// liveNodesScript returns the members of KEYS[1] whose lease runs by Redis TIME, with their
// scores (lease end, Unix ms).
var liveNodesScript = rueidis.NewLuaScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
return redis.call('ZRANGEBYSCORE', KEYS[1], now, '+inf', 'WITHSCORES')
`)

// LiveNodes implements ports.NodeInspector: the live members, then SCARD of each slot group's
// devices set and XLEN of each channel in one round trip.
func (n *Nodes) LiveNodes(ctx context.Context, tenant string) ([]ports.NodeStatus, error) {
	k, err := KeysOf(tenant)
	if err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	pairs, err := liveNodesScript.Exec(ctx, n.c, []string{k.Nodes()}, nil).AsStrSlice()
	if err != nil {
		return nil, fmt.Errorf("list nodes of %s: %w", tenant, err)
	}
	const per = SlotGroups + 1 // the SCARDs and the XLEN of one node
	out := make([]ports.NodeStatus, 0, len(pairs)/2)
	cmds := make(rueidis.Commands, 0, per*len(pairs)/2)
	for i := 0; i+1 < len(pairs); i += 2 {
		until, err := strconv.ParseFloat(pairs[i+1], 64)
		if err != nil {
			return nil, fmt.Errorf("lease of node %s in %s: %w", pairs[i], tenant, err)
		}
		out = append(out, ports.NodeStatus{Node: pairs[i], LeaseUntil: time.UnixMilli(int64(until))})
		for g := range SlotGroups {
			cmds = append(cmds, n.c.B().Scard().Key(k.NodeDevices(pairs[i], g)).Build())
		}
		cmds = append(cmds, n.c.B().Xlen().Key(k.NodeChannel(pairs[i])).Build())
	}
	if len(cmds) == 0 {
		return out, nil
	}
	res := n.c.DoMulti(ctx, cmds...)
	for i := range out {
		node := res[per*i : per*(i+1)]
		for _, r := range node[:SlotGroups] {
			devices, err := r.AsInt64()
			if err != nil {
				return nil, fmt.Errorf("count devices of node %s in %s: %w", out[i].Node, tenant, err)
			}
			out[i].Devices += devices
		}
		if out[i].Backlog, err = node[SlotGroups].AsInt64(); err != nil {
			return nil, fmt.Errorf("count backlog of node %s in %s: %w", out[i].Node, tenant, err)
		}
	}
	slices.SortFunc(out, func(a, b ports.NodeStatus) int { return strings.Compare(a.Node, b.Node) })
	return out, nil
}
