package redis

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"github.com/imdhq/imd/core/domain/dialog"
	"github.com/imdhq/imd/ports"
)

// DialogStore is ports.DialogStore on the keys of seed 003 §11 (see keys_dialogs.go). Every
// change that must not be split is one Lua script; scores are milliseconds, far below 2^53, so
// Lua's doubles hold them exactly.
type DialogStore struct {
	c rueidis.Client
	// oneNode: not a cluster, so a pass's lists of every slot group may go in one call
	oneNode bool
}

var _ ports.DialogStore = (*DialogStore)(nil)

// NewDialogStore returns the list store on c.
func NewDialogStore(c rueidis.Client) *DialogStore {
	return &DialogStore{c: c, oneNode: c.Mode() != rueidis.ClientModeCluster}
}

// applyListsScript applies runs of messages, each run of one conversation, to some batches of its
// recipients in one slot group, each message once per batch: a batch's marks of a message and the
// batch's list changes commit together, so a crash can never leave a count without its mark.
// On a cluster a call touches the keys of one slot group (DESIGN §11): a deliver pass's runs go
// in one call per group their recipients live in, as few as maxScriptUsers allows (on one node
// in one call for all groups, DialogStore.callGroup); a big group's batches
// are split over several, so no single call runs long. The messages of a run act together, as
// they would one after another: a user's count grows by the new ones not sent by the user and
// not silent; with none of those the dialog is only re-scored where it is. A dialog keeps the
// higher of its old and new score, so a late older message never moves it back. The preview
// moves forward only, so setting it again on a repeat changes nothing. It returns, per part,
// {first (0/1) per message, muted users} per batch; muted users are reported even on a repeat,
// all but the one who sent every message of the part, if one did (ports.DialogStore.Apply).
// The common case, a dialog already in unread, costs three calls per user (mute, list, count)
// whatever the number of messages; the sender's own, two (where it is, then the list).
//
// A batch's marks are the seqs of the conversation it applied, as at most maxMarkRanges ranges
// "lo-hi,lo-hi,…" in a field of one HASH per conversation (Keys.DeliverListMarks; per slot group
// on a cluster, one for every batch on one node; the field names batch and group): a message is
// named by its seq in its conversation's topic as well as by its job (DESIGN §1.3, issue 30), so
// a part's marks cost one HMGET and one HSET whatever the number of its messages and batches.
// The batches of a small group usually hold the same ranges, so what a run does to a mark is
// worked out once per distinct value. Field x is the HASH's expiry in Unix ms by Redis's TIME:
// it is moved, to now + twice the longest ttl written, only when a write asks for more than it
// has left, so the marks live at least as long as any write asked (a behind job's repair
// window) at one PEXPIREAT per ttl. Past maxMarkRanges the oldest range is forgotten, as an old
// marker's TTL forgot it. A batch without a field reads the STRING the code before kept per
// batch (Keys.DeliverListSeqs, "<until ms>|<ranges>"), so a job the old code applied counts
// nobody again when the new code retries it through a rolling upgrade (DESIGN, issue 30).
// KEYS, per part: the marks HASH; the preview (when the part sets none, the HASH again: it is
// not touched); the batches' old marks in batch order; then unread, read, unreadcnt, muted per
// user.
// ARGV: the part count, then per part: marks ttl ms, conversation, message count m, then score,
// sender, silent (0/1) and seq per message, then the preview's seq and JSON (empty for none),
// the batch count, field (placedBatch.field) and user count per batch, then one user id per
// user, batch after batch.
var applyListsScript = newBatchScript(`
local MAX_RANGES = ` + strconv.Itoa(maxMarkRanges) + `
-- put scores the dialog in into and takes it out of other, keeping the higher score. A dialog is
-- in one of the two lists, so when ZADD finds it already in into (the common case: another
-- message to an unread dialog) other cannot hold it and is not looked at (issue 30 part 2: one
-- command less per recipient and run).
local function put(into, other, conv, score)
  if redis.call('ZADD', into, 'GT', score, conv) == 0 then return end
  local prev = redis.call('ZSCORE', other, conv)
  if not prev then return end
  redis.call('ZREM', other, conv)
  if tonumber(prev) > tonumber(score) then redis.call('ZADD', into, 'GT', prev, conv) end
end

-- dec is the decimal string of an integer, remembered from where the call read it (ARGV, a
-- mark) or made once (issue 30 part 2: a number-to-string conversion costs Redis about what a
-- redis.call does, and every mark written is rebuilt from numbers).
local decs = {}
local function dec(n)
  local s = decs[n]
  if not s then
    s = string.format('%d', n)
    decs[n] = s
  end
  return s
end
local function num(s)
  local n = tonumber(s)
  decs[n] = s
  return n
end

-- parse reads the ranges of a mark; '' is none.
local function parse(v)
  -- One range is the common case: one match reads it.
  local lo, hi = string.match(v, '^(%d+)-(%d+)$')
  if lo then return {{num(lo), num(hi)}} end
  local rs = {}
  for l, h in string.gmatch(v, '(%d+)-(%d+)') do
    rs[#rs + 1] = {num(l), num(h)}
  end
  return rs
end

local function has(rs, s)
  for i = 1, #rs do
    if s >= rs[i][1] and s <= rs[i][2] then return true end
  end
  return false
end

-- add puts s in the sorted, disjoint ranges rs, merging neighbours.
local function add(rs, s)
  local i = 1
  while i <= #rs and rs[i][2] < s - 1 do i = i + 1 end
  if i <= #rs and rs[i][1] <= s + 1 then
    if s < rs[i][1] then rs[i][1] = s end
    if s > rs[i][2] then
      rs[i][2] = s
      if i < #rs and rs[i + 1][1] <= s + 1 then
        rs[i][2] = rs[i + 1][2]
        table.remove(rs, i + 1)
      end
    end
  else
    table.insert(rs, i, {s, s})
  end
  while #rs > MAX_RANGES do table.remove(rs, 1) end
end

-- hashes[key] is a marks HASH as read, then as this call changed it: f[field] its value (''
-- for none), x its expiry as read, floor the latest until of the old marks it took in, and
-- ttl, once a field changed, the longest ttl a change asked. A message repeated in a part, or
-- in two parts of the call, still acts once per batch.
local hashes = {}
local function marks_of(key, fields, olds)
  local h = hashes[key]
  if not h then
    h = {f = {}, floor = 0}
    hashes[key] = h
  end
  -- A part with no batch (the preview's own on a cluster) reads nothing.
  if #fields == 0 then return h end
  local want, at = {}, {}
  if not h.read then want[1] = 'x' end
  for i, field in ipairs(fields) do
    if h.f[field] == nil then
      want[#want + 1] = field
      at[#want] = i
    end
  end
  if #want == 0 then return h end
  local got = redis.call('HMGET', key, unpack(want))
  if not h.read then
    h.read, h.x = true, got[1] and num(got[1]) or 0
  end
  local old, oldat = {}, {}
  for j = 1, #want do
    local i = at[j]
    if i then
      if got[j] then
        h.f[fields[i]] = got[j]
      else
        old[#old + 1], oldat[#old + 1] = olds[i], fields[i]
      end
    end
  end
  for from = 1, #old, 1000 do -- unpack takes a few thousand values at most
    local to = math.min(from + 999, #old)
    local was = redis.call('MGET', unpack(old, from, to))
    for i = from, to do
      local raw, v = was[i - from + 1], ''
      if raw then
        local untl, rs = string.match(raw, '^(%d+)|(.*)$')
        if untl then
          v = rs
          h.floor = math.max(h.floor, num(untl))
        end
      end
      h.f[oldat[i]] = v
    end
  end
  return h
end

local out = {}
local a, k = 2, 1 -- where the part's ARGV and KEYS begin
for r = 1, tonumber(ARGV[1]) do
  local ttl, conv, m = tonumber(ARGV[a]), ARGV[a + 1], tonumber(ARGV[a + 2])
  local p = a + 3 + 4 * m
  local nb = tonumber(ARGV[p + 2])
  local hkey, preview = KEYS[k], KEYS[k + 1]
  if ARGV[p + 1] ~= '' then
    -- Set, then put back a preview of a later or the same seq: one command where GET and SET
    -- were two, since a preview mostly moves forward (issue 30 part 2).
    local cur = redis.call('SET', preview, ARGV[p + 1], 'GET')
    local seq = cur and string.match(cur, '"seq":(%d+)')
    if seq and tonumber(seq) >= tonumber(ARGV[p]) then
      redis.call('SET', preview, cur)
    end
  end
  local fields, olds = {}, {}
  for b = 1, nb do
    fields[b], olds[b] = ARGV[p + 1 + 2 * b], KEYS[k + 1 + b]
  end
  local h = marks_of(hkey, fields, olds)
  -- seqs are the part's seqs, read once for all its batches. sole is the user who sent every
  -- message of the part, if one did: no message alerts them, so their mute matters to nobody
  -- and is not looked up (issue 30 part 2: one command less per run, in a P2P run one of two).
  local seqs, sole = {}, ARGV[a + 4]
  for j = 1, m do
    seqs[j] = num(ARGV[a + 2 + 4 * j])
    if ARGV[a + 4 * j] ~= sole then sole = nil end
  end
  decs[ttl] = ARGV[a]
  -- What the part's messages do to a mark depends on its value alone: worked out once per value.
  local done = {}
  local function apply(v)
    local rs = parse(v)
    local t = {firsts = {}, counted = 0, own = {}, v = v}
    for j = 1, m do
      local seq = seqs[j]
      local first = not has(rs, seq)
      t.firsts[j] = first and 1 or 0
      if first then
        add(rs, seq)
        t.changed = true
        local s, sender, silent = ARGV[a - 1 + 4 * j], ARGV[a + 4 * j], ARGV[a + 1 + 4 * j] == '1'
        if not t.score or tonumber(s) > tonumber(t.score) then t.score = s end
        if not silent then
          t.counted = t.counted + 1
          t.own[sender] = (t.own[sender] or 0) + 1
        end
      end
    end
    if t.changed then
      local parts = {}
      for i, x in ipairs(rs) do parts[i] = dec(x[1]) .. '-' .. dec(x[2]) end
      t.v = table.concat(parts, ',')
    end
    return t
  end
  local key, arg = k + 2 + nb, p + 3 + 2 * nb
  local answers = {}
  for b = 1, nb do
    local n = tonumber(ARGV[p + 2 + 2 * b])
    local v = h.f[fields[b]]
    local t = done[v]
    if not t then
      t = apply(v)
      done[v] = t
    end
    if t.changed then
      h.f[fields[b]] = t.v
      h.dirty = h.dirty or {}
      h.dirty[fields[b]] = true
      h.ttl = math.max(h.ttl or 0, ttl)
    end
    local score, counted, own = t.score, t.counted, t.own
    local muted = {}
    for i = 0, n - 1 do
      local unread, read, cnt, mset = KEYS[key + 4 * i], KEYS[key + 1 + 4 * i], KEYS[key + 2 + 4 * i], KEYS[key + 3 + 4 * i]
      local user = ARGV[arg + i]
      local is_muted = user ~= sole and redis.call('SISMEMBER', mset, conv) == 1
      if is_muted then muted[#muted + 1] = user end
      if score then
        local c = counted - (own[user] or 0)
        if c == 0 then
          if redis.call('ZSCORE', unread, conv) then
            redis.call('ZADD', unread, 'GT', score, conv)
          else
            redis.call('ZADD', read, 'GT', score, conv)
          end
        elseif is_muted then
          put(read, unread, conv, score)
        else
          put(unread, read, conv, score)
          redis.call('HINCRBY', cnt, conv, dec(c))
        end
      end
    end
    key, arg = key + 4 * n, arg + n
    answers[b] = {t.firsts, muted}
  end
  out[r] = answers
  a, k = arg, key
end
local now
for hkey, h in pairs(hashes) do
  if h.dirty then
    if not now then
      local t = redis.call('TIME')
      now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
    end
    local set = {}
    for field in pairs(h.dirty) do
      set[#set + 1], set[#set + 2] = field, h.f[field]
    end
    local expire
    if math.max(now + h.ttl, h.floor) > h.x then
      expire = dec(math.max(now + 2 * h.ttl, h.floor))
      set[#set + 1], set[#set + 2] = 'x', expire
    end
    redis.call('HSET', hkey, unpack(set))
    if expire then redis.call('PEXPIREAT', hkey, expire) end
  end
end
return out
`)

// maxMarkRanges bounds the seq ranges a batch's marks keep per conversation: ranges are
// out-of-order gaps still open (DESIGN §5), so a few suffice, and the value stays short.
const maxMarkRanges = 32

// maxScriptUsers bounds the recipients one list script changes. A deliver pass of P2P
// messages or small groups' then costs one script per slot group, and a 10,000-member group's
// stays split into scripts of a few hundred users.
const maxScriptUsers = 256

// Apply updates the previews and lists in one pipelined round trip, in one script call per
// slot group its recipients live in on a cluster, one for all on one node (or more, of up to
// maxScriptUsers each): a batch's users of group g act once per message under the field
// (batch, g) of the marks DeliverListMarks(conversation, g) on a cluster, of
// DeliverListMarks(conversation, the conversation's group) on one node, so a job applied twice,
// or half applied and retried, counts each user once (DESIGN §5, §11). dialog.BatchesOf
// splits users the way UserGroup does, so a batch is normally in one group; a batch spread
// over several is First when any of its groups acted now. Consecutive updates of one conversation with the
// same recipient batches run together, which is what makes a backlog of a big group cheap to
// catch up on.
func (s *DialogStore) Apply(ctx context.Context, tenant string, us ...dialog.Update) ([]dialog.Applied, error) {
	k, err := KeysOf(tenant)
	if err != nil {
		return nil, fmt.Errorf("apply dialogs: %w", err)
	}
	for _, u := range us {
		if u.OnceTTL < time.Millisecond || u.Preview.Seq < 1 {
			return nil, fmt.Errorf("apply dialogs of conversation %d: need a marks ttl ≥ 1ms and the message's seq", u.ConversationID)
		}
	}
	if len(us) == 0 {
		return nil, nil
	}
	runs := dialog.Runs(us)
	var byGroup [SlotGroups][]scriptCall
	for i, run := range runs {
		newest := run[0]
		for _, u := range run[1:] {
			if u.Preview.Seq > newest.Preview.Seq {
				newest = u
			}
		}
		preview, err := json.Marshal(newest.Preview)
		if err != nil {
			return nil, fmt.Errorf("encode preview of conversation %d: %w", newest.ConversationID, err)
		}
		home := ConversationGroup(newest.ConversationID)
		placed := s.place(run[0].Batches, home)
		for g := range SlotGroups {
			if len(placed[g]) == 0 && g != home {
				continue
			}
			for j, part := range splitBatches(placed[g]) {
				p := previewArgs{seq: "0"} // the home group's first part sets it
				if g == home && j == 0 {
					p = previewArgs{seq: itoa(newest.Preview.Seq), json: string(preview)}
				}
				users := usersOf(part)
				at := s.callGroup(g)
				calls := byGroup[at]
				if n := len(calls); n == 0 || calls[n-1].users+users > maxScriptUsers {
					calls = append(calls, scriptCall{group: at})
				}
				calls[len(calls)-1].add(k, g, run, part, p, i, users)
				byGroup[at] = calls
			}
		}
	}
	var calls []scriptCall
	for _, cs := range byGroup {
		calls = append(calls, cs...)
	}
	execs := make([]rueidis.LuaExec, len(calls))
	for i, c := range calls {
		execs[i] = rueidis.LuaExec{Keys: c.keys, Args: c.argv()}
	}
	results := applyListsScript.ExecBatch(ctx, s.c, execs)
	// Answers go per update, then batch, as the updates came; the parts of a batch in several
	// groups merge.
	perRun := make([][]batchApplied, len(runs))
	for i, run := range runs {
		perRun[i] = make([]batchApplied, len(run[0].Batches))
		for b := range perRun[i] {
			perRun[i][b].firsts = make([]bool, len(run))
		}
	}
	for e, r := range results {
		parts, err := r.ToArray()
		if err == nil && len(parts) != len(calls[e].runOf) {
			err = fmt.Errorf("script answered %d runs of %d", len(parts), len(calls[e].runOf))
		}
		if err != nil {
			return nil, fmt.Errorf("apply dialogs of conversation %d in %s (slot group %d): %w", runs[calls[e].runOf[0]][0].ConversationID, tenant, calls[e].group, err)
		}
		for j, part := range parts {
			i, positions := calls[e].runOf[j], calls[e].positions[j]
			got, err := decodeApplied(part, len(positions), len(runs[i]))
			if err != nil {
				return nil, fmt.Errorf("apply dialogs of conversation %d in %s: %w", runs[i][0].ConversationID, tenant, err)
			}
			for b, pos := range positions {
				into := &perRun[i][pos]
				for m, first := range got[b].firsts {
					into.firsts[m] = into.firsts[m] || first
				}
				into.muted = append(into.muted, got[b].muted...)
			}
		}
	}
	var out []dialog.Applied
	for i, run := range runs {
		for j := range run {
			for _, b := range perRun[i] {
				out = append(out, dialog.Applied{First: b.firsts[j], Muted: b.muted})
			}
		}
	}
	return out, nil
}

// callGroup is where the parts of slot group g go: their own group's calls on a cluster; on one
// node, where the groups share one main thread, group 0's, so that a pass costs one script call
// per maxScriptUsers recipients whatever groups they live in (issue 30 part 2).
func (s *DialogStore) callGroup(g int) int {
	if s.oneNode {
		return 0
	}
	return g
}

// placedBatch is the part of a batch in one slot group, and where the batch stands in its
// update.
type placedBatch struct {
	pos   int
	group int // its users' slot group
	dialog.Batch
}

// field names its marks in the marks HASH: batch and group, since a mark counts the users of
// one batch in one group (Apply).
func (b placedBatch) field() string { return strconv.Itoa(b.Index) + ":" + strconv.Itoa(b.group) }

// place splits batches by the slot groups of their users, keeping their order. On one node
// every part goes with the conversation's group home, so that one HASH holds the marks of all
// its batches and a run's part reads and writes them once.
func (s *DialogStore) place(bs []dialog.Batch, home int) [SlotGroups][]placedBatch {
	var out [SlotGroups][]placedBatch
	for pos, b := range bs {
		var users [SlotGroups][]int64
		for _, u := range b.Users {
			g := UserGroup(u)
			users[g] = append(users[g], u)
		}
		for g, us := range users {
			if len(us) > 0 {
				at := g
				if s.oneNode {
					at = home
				}
				out[at] = append(out[at], placedBatch{pos: pos, group: g, Batch: dialog.Batch{Index: b.Index, Users: us}})
			}
		}
	}
	return out
}

// splitBatches groups batches into parts of at most maxScriptUsers users (a bigger batch alone),
// in order; no batches make one empty part, which still sets the preview.
func splitBatches(bs []placedBatch) [][]placedBatch {
	parts := [][]placedBatch{nil}
	users := 0
	for _, b := range bs {
		last := len(parts) - 1
		if len(parts[last]) > 0 && users+len(b.Users) > maxScriptUsers {
			parts, users, last = append(parts, nil), 0, last+1
		}
		parts[last] = append(parts[last], b)
		users += len(b.Users)
	}
	return parts
}

func usersOf(batches []placedBatch) int {
	n := 0
	for _, b := range batches {
		n += len(b.Users)
	}
	return n
}

// previewArgs are the preview's seq and JSON for the script; an empty JSON sets none.
type previewArgs struct{ seq, json string }

// scriptCall is one call of applyListsScript in one slot group (any, on one node: DialogStore.
// callGroup): parts of runs, each a run's messages applied to some of its batches in one group.
type scriptCall struct {
	group      int // the slot group of its keys, or 0 on one node
	keys, args []string
	parts      int
	users      int
	runOf      []int   // the run of each part
	positions  [][]int // where each part's batches stand in their run's updates
}

// argv is the call's ARGV: the part count first.
func (c scriptCall) argv() []string { return append([]string{strconv.Itoa(c.parts)}, c.args...) }

// add appends the part that applies run (the runs' index i) to batches of its recipients in
// slot group g.
func (c *scriptCall) add(k Keys, g int, run []dialog.Update, batches []placedBatch, p previewArgs, i, users int) {
	u := run[0]
	c.keys = slices.Grow(c.keys, 2+len(batches)+4*users)
	c.args = slices.Grow(c.args, 6+4*len(run)+2*len(batches)+users)
	c.args = append(c.args, strconv.FormatInt(u.OnceTTL.Milliseconds(), 10), itoa(u.ConversationID), strconv.Itoa(len(run)))
	for _, m := range run {
		c.args = append(c.args, itoa(m.Score), itoa(m.Sender), flag(m.Silent), itoa(m.Preview.Seq))
	}
	marks := k.DeliverListMarks(u.ConversationID, g)
	preview := k.DialogPreview(u.ConversationID)
	if p.json == "" {
		preview = marks // not touched, and a key of another group would fail on a cluster
	}
	c.keys = append(c.keys, marks, preview)
	for _, b := range batches {
		c.keys = append(c.keys, k.DeliverListSeqs(u.ConversationID, b.Index, b.group))
	}
	c.args = append(c.args, p.seq, p.json, strconv.Itoa(len(batches)))
	positions := make([]int, len(batches))
	for j, b := range batches {
		c.args = append(c.args, b.field(), strconv.Itoa(len(b.Users)))
		positions[j] = b.pos
	}
	for _, b := range batches {
		for _, user := range b.Users {
			c.keys = append(c.keys, k.DialogUnread(user), k.DialogRead(user), k.DialogUnreadCount(user), k.DialogMuted(user))
			c.args = append(c.args, itoa(user))
		}
	}
	c.parts, c.users = c.parts+1, c.users+users
	c.runOf, c.positions = append(c.runOf, i), append(c.positions, positions)
}

// AppliedSeq reads the seq of the conversation's preview, 0 without one.
func (s *DialogStore) AppliedSeq(ctx context.Context, tenant string, conversationID int64) (int64, error) {
	k, err := KeysOf(tenant)
	if err != nil {
		return 0, fmt.Errorf("applied seq: %w", err)
	}
	raw, err := s.c.Do(ctx, s.c.B().Get().Key(k.DialogPreview(conversationID)).Build()).AsBytes()
	if rueidis.IsRedisNil(err) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("preview of conversation %d in %s: %w", conversationID, tenant, err)
	}
	var p dialog.Preview
	if err := json.Unmarshal(raw, &p); err != nil {
		return 0, fmt.Errorf("preview of conversation %d in %s: %w", conversationID, tenant, err)
	}
	return p.Seq, nil
}

// batchApplied is the script's answer for one batch.
type batchApplied struct {
	firsts []bool // per message of the run
	muted  []int64
}

// decodeApplied reads the script's answer for one part: batches batches of a run of m messages.
func decodeApplied(r rueidis.RedisMessage, batches, m int) ([]batchApplied, error) {
	vals, err := r.ToArray()
	if err != nil {
		return nil, err
	}
	if len(vals) != batches {
		return nil, fmt.Errorf("script answered %d batches of %d", len(vals), batches)
	}
	out := make([]batchApplied, 0, batches)
	for _, v := range vals {
		pair, err := v.ToArray()
		if err != nil {
			return nil, err
		}
		if len(pair) != 2 {
			return nil, fmt.Errorf("script returned %d values for a batch, want 2", len(pair))
		}
		flags, err := pair[0].AsIntSlice()
		if err != nil {
			return nil, err
		}
		if len(flags) != m {
			return nil, fmt.Errorf("script returned %d first flags for %d messages", len(flags), m)
		}
		b := batchApplied{firsts: make([]bool, m)}
		for i, f := range flags {
			b.firsts[i] = f == 1
		}
		users, err := pair[1].AsStrSlice()
		if err != nil {
			return nil, err
		}
		for _, u := range users {
			id, err := strconv.ParseInt(u, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("muted user %q: %w", u, err)
			}
			b.muted = append(b.muted, id)
		}
		out = append(out, b)
	}
	return out, nil
}

// markReadScript clears the count and moves the dialog from unread to read with its score.
// KEYS: unread, read, unreadcnt. ARGV: conversation.
var markReadScript = rueidis.NewLuaScript(`
redis.call('HDEL', KEYS[3], ARGV[1])
local s = redis.call('ZSCORE', KEYS[1], ARGV[1])
if s then
  redis.call('ZREM', KEYS[1], ARGV[1])
  redis.call('ZADD', KEYS[2], 'GT', s, ARGV[1])
end
return 1
`)

// MarkRead clears the unread count of one dialog (seed 003 §14).
func (s *DialogStore) MarkRead(ctx context.Context, tenant string, user, conversationID int64) error {
	k, err := KeysOf(tenant)
	if err != nil {
		return fmt.Errorf("mark dialog read: %w", err)
	}
	keys := []string{k.DialogUnread(user), k.DialogRead(user), k.DialogUnreadCount(user)}
	if err := markReadScript.Exec(ctx, s.c, keys, []string{itoa(conversationID)}).Error(); err != nil {
		return fmt.Errorf("mark conversation %d read for %d in %s: %w", conversationID, user, tenant, err)
	}
	return nil
}

// Changed reads both ZSETs above after, merges them, and then the details of the page, in two
// pipelined round trips.
func (s *DialogStore) Changed(ctx context.Context, tenant string, user, after int64, limit int) ([]dialog.Entry, error) {
	k, err := KeysOf(tenant)
	if err != nil {
		return nil, fmt.Errorf("changed dialogs: %w", err)
	}
	if limit <= 0 {
		return nil, nil
	}
	above := "(" + itoa(after)
	ranges := s.c.DoMulti(ctx,
		s.c.B().Zrange().Key(k.DialogUnread(user)).Min(above).Max("+inf").Byscore().Limit(0, int64(limit)).Withscores().Build(),
		s.c.B().Zrange().Key(k.DialogRead(user)).Min(above).Max("+inf").Byscore().Limit(0, int64(limit)).Withscores().Build(),
	)
	var entries []dialog.Entry
	for _, r := range ranges {
		scored, err := r.AsZScores()
		if err != nil {
			return nil, fmt.Errorf("dialogs of %d in %s: %w", user, tenant, err)
		}
		for _, z := range scored {
			id, err := strconv.ParseInt(z.Member, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("dialog member %q of %d: %w", z.Member, user, err)
			}
			entries = append(entries, dialog.Entry{ConversationID: id, Score: int64(z.Score)})
		}
	}
	slices.SortFunc(entries, func(a, b dialog.Entry) int {
		return cmp.Or(cmp.Compare(a.Score, b.Score), cmp.Compare(a.ConversationID, b.ConversationID))
	})
	entries = entries[:min(len(entries), limit)]
	if len(entries) == 0 {
		return entries, nil
	}
	if err := s.details(ctx, k, user, entries); err != nil {
		return nil, fmt.Errorf("dialog details of %d in %s: %w", user, tenant, err)
	}
	return entries, nil
}

// details fills counts, flags and previews of entries.
func (s *DialogStore) details(ctx context.Context, k Keys, user int64, entries []dialog.Entry) error {
	members := make([]string, len(entries))
	var (
		previews [SlotGroups][]string // the previews of each slot group (DESIGN §11), one MGET each
		at       = make([][2]int, len(entries))
	)
	for i, e := range entries {
		members[i] = itoa(e.ConversationID)
		g := ConversationGroup(e.ConversationID)
		at[i] = [2]int{g, len(previews[g])}
		previews[g] = append(previews[g], k.DialogPreview(e.ConversationID))
	}
	cmds := rueidis.Commands{
		s.c.B().Hmget().Key(k.DialogUnreadCount(user)).Field(members...).Build(),
		s.c.B().Smismember().Key(k.DialogMuted(user)).Member(members...).Build(),
		s.c.B().Zmscore().Key(k.DialogPinned(user)).Member(members...).Build(),
	}
	var reply [SlotGroups]int // index in res of each group's MGET
	for g, keys := range previews {
		if len(keys) > 0 {
			reply[g] = len(cmds)
			cmds = append(cmds, s.c.B().Mget().Key(keys...).Build())
		}
	}
	res := s.c.DoMulti(ctx, cmds...)
	counts, err := res[0].ToArray()
	if err != nil {
		return err
	}
	muted, err := res[1].AsIntSlice()
	if err != nil {
		return err
	}
	pinned, err := res[2].ToArray()
	if err != nil {
		return err
	}
	var texts [SlotGroups][]rueidis.RedisMessage
	for g, keys := range previews {
		if len(keys) == 0 {
			continue
		}
		if texts[g], err = res[reply[g]].ToArray(); err != nil {
			return err
		}
		if len(texts[g]) != len(keys) {
			return errors.New("preview replies do not match the dialogs")
		}
	}
	if len(counts) != len(entries) || len(muted) != len(entries) || len(pinned) != len(entries) {
		return errors.New("detail replies do not match the dialogs")
	}
	for i := range entries {
		e := &entries[i]
		if n, err := counts[i].AsInt64(); err == nil {
			e.Unread = n
		} else if !rueidis.IsRedisNil(err) {
			return err
		}
		e.Muted = muted[i] == 1
		e.Pinned = !pinned[i].IsNil()
		raw, err := texts[at[i][0]][at[i][1]].ToString()
		if rueidis.IsRedisNil(err) {
			continue
		}
		if err != nil {
			return err
		}
		if err := json.Unmarshal([]byte(raw), &e.Preview); err != nil {
			return fmt.Errorf("preview of conversation %d: %w", e.ConversationID, err)
		}
	}
	return nil
}

// UnreadTotal sums the user's unread-count HASH, read whole by one HVALS (docs/DESIGN.md
// issue-32 part 1 "Badge"): it holds a field only for a dialog with unread messages (MarkRead
// and RemoveDialog delete it), so the cost is the user's unread conversations, never the whole
// list and no preview, and there is no total of its own to keep or rebuild.
func (s *DialogStore) UnreadTotal(ctx context.Context, tenant string, user int64) (int64, error) {
	k, err := KeysOf(tenant)
	if err != nil {
		return 0, fmt.Errorf("unread total: %w", err)
	}
	counts, err := s.c.Do(ctx, s.c.B().Hvals().Key(k.DialogUnreadCount(user)).Build()).AsStrSlice()
	if err != nil {
		return 0, fmt.Errorf("unread counts of %d in %s: %w", user, tenant, err)
	}
	var sum int64
	for _, c := range counts {
		n, err := strconv.ParseInt(c, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("unread count %q of %d in %s: %w", c, user, tenant, err)
		}
		sum += n
	}
	return sum, nil
}

// Built reports whether the user's list marker exists.
func (s *DialogStore) Built(ctx context.Context, tenant string, user int64) (bool, error) {
	k, err := KeysOf(tenant)
	if err != nil {
		return false, fmt.Errorf("dialogs built: %w", err)
	}
	n, err := s.c.Do(ctx, s.c.B().Exists().Key(k.DialogBuilt(user)).Build()).AsInt64()
	if err != nil {
		return false, fmt.Errorf("dialogs built for %d in %s: %w", user, tenant, err)
	}
	return n == 1, nil
}

// rebuildChunk bounds the conversations one rebuild script writes, so a user with thousands of
// conversations never blocks Redis for long.
const rebuildChunk = 200

// rebuildScript writes one chunk of a user's list from MySQL state. A dialog already listed
// keeps its ZSET and count, its score only goes up; a new one goes to unread with its count or
// to read. The muted SET follows MySQL. ARGV[1] = '1' drops the user's lists, counts and muted
// set first; ARGV[2] = '1' marks the list built. Every key is the user's, in the user's slot
// group (DESIGN §11); the previews are written before, each in its conversation's group.
// KEYS: unread, read, unreadcnt, muted, built.
// ARGV: replace, mark, then conversation, score, unread, muted (0/1) per conversation.
var rebuildScript = rueidis.NewLuaScript(`
local unread, read, cnt, mset, built = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
if ARGV[1] == '1' then redis.call('DEL', unread, read, cnt, mset) end
for i = 0, (#ARGV - 2) / 4 - 1 do
  local a = 3 + 4 * i
  local conv, score, count, is_muted = ARGV[a], ARGV[a + 1], ARGV[a + 2], ARGV[a + 3]
  if is_muted == '1' then redis.call('SADD', mset, conv) else redis.call('SREM', mset, conv) end
  if redis.call('ZSCORE', unread, conv) then
    redis.call('ZADD', unread, 'GT', score, conv)
  elseif redis.call('ZSCORE', read, conv) then
    redis.call('ZADD', read, 'GT', score, conv)
  elseif tonumber(count) > 0 then
    redis.call('ZADD', unread, score, conv)
    redis.call('HSETNX', cnt, conv, count)
  else
    redis.call('ZADD', read, score, conv)
  end
end
if ARGV[2] == '1' then redis.call('SET', built, '1') end
return 1
`)

// Rebuild writes the list chunk by chunk and marks it built with the last chunk, so a rebuild
// cut short is redone by the next sync. A chunk's previews go first, a round trip ahead of its
// list script (SET NX: a preview already stored wins), so a list is never marked built before
// its previews are stored.
func (s *DialogStore) Rebuild(ctx context.Context, tenant string, user int64, states []dialog.State, replace bool) error {
	k, err := KeysOf(tenant)
	if err != nil {
		return fmt.Errorf("rebuild dialogs: %w", err)
	}
	keys := []string{k.DialogUnread(user), k.DialogRead(user), k.DialogUnreadCount(user), k.DialogMuted(user), k.DialogBuilt(user)}
	for start := 0; start == 0 || start < len(states); start += rebuildChunk {
		chunk := states[start:min(start+rebuildChunk, len(states))]
		args := []string{flag(replace && start == 0), flag(start+rebuildChunk >= len(states))}
		previews := make(rueidis.Commands, 0, len(chunk))
		for _, st := range chunk {
			preview, err := json.Marshal(st.Preview())
			if err != nil {
				return fmt.Errorf("encode preview of conversation %d: %w", st.ConversationID, err)
			}
			previews = append(previews, s.c.B().Set().Key(k.DialogPreview(st.ConversationID)).Value(string(preview)).Nx().Build())
			args = append(args, itoa(st.ConversationID), itoa(dialog.ScoreOf(st.LastMsgAt)), itoa(st.Unread()), flag(st.Muted))
		}
		for _, r := range s.c.DoMulti(ctx, previews...) {
			if err := r.Error(); err != nil && !rueidis.IsRedisNil(err) {
				return fmt.Errorf("rebuild dialog previews of %d in %s: %w", user, tenant, err)
			}
		}
		if err := rebuildScript.Exec(ctx, s.c, keys, args).Error(); err != nil {
			return fmt.Errorf("rebuild dialogs of %d in %s: %w", user, tenant, err)
		}
	}
	return nil
}

func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// SetMuted adds to or removes from the user's muted SET.
func (s *DialogStore) SetMuted(ctx context.Context, tenant string, user, conversationID int64, muted bool) error {
	k, err := KeysOf(tenant)
	if err != nil {
		return fmt.Errorf("set muted: %w", err)
	}
	cmd := s.c.B().Srem().Key(k.DialogMuted(user)).Member(itoa(conversationID)).Build()
	if muted {
		cmd = s.c.B().Sadd().Key(k.DialogMuted(user)).Member(itoa(conversationID)).Build()
	}
	if err := s.c.Do(ctx, cmd).Error(); err != nil {
		return fmt.Errorf("set muted of conversation %d for %d in %s: %w", conversationID, user, tenant, err)
	}
	return nil
}

// SetPinned pins at pinnedAt or, for 0, unpins.
func (s *DialogStore) SetPinned(ctx context.Context, tenant string, user, conversationID, pinnedAt int64) error {
	k, err := KeysOf(tenant)
	if err != nil {
		return fmt.Errorf("set pinned: %w", err)
	}
	cmd := s.c.B().Zrem().Key(k.DialogPinned(user)).Member(itoa(conversationID)).Build()
	if pinnedAt > 0 {
		cmd = s.c.B().Zadd().Key(k.DialogPinned(user)).ScoreMember().ScoreMember(float64(pinnedAt), itoa(conversationID)).Build()
	}
	if err := s.c.Do(ctx, cmd).Error(); err != nil {
		return fmt.Errorf("set pinned of conversation %d for %d in %s: %w", conversationID, user, tenant, err)
	}
	return nil
}
