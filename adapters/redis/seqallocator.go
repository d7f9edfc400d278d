package redis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"github.com/imdhq/imd/core/domain/month"
	"github.com/imdhq/imd/core/domain/seq"
	"github.com/imdhq/imd/ports"
)

// DefaultIdemTTL is how long a send idempotency record lives when no TTL is configured.
const DefaultIdemTTL = 24 * time.Hour

// SeqAllocator is ports.SeqAllocator: the idempotency record, the topic counter and the
// active month are read and written by one Lua script, so concurrent senders on any node
// agree on every (seq, month) pair (DESIGN §4 step 4, seed 000 §3.3).
type SeqAllocator struct {
	c       rueidis.Client
	idemTTL time.Duration
	batches *scriptBatches
}

var (
	_ ports.SeqAllocator = (*SeqAllocator)(nil)
	_ ports.PendingSeqs  = (*SeqAllocator)(nil)
)

// NewSeqAllocator returns the allocator; idemTTL ≤ 0 means DefaultIdemTTL.
func NewSeqAllocator(c rueidis.Client, idemTTL time.Duration) *SeqAllocator {
	if idemTTL <= 0 {
		idemTTL = DefaultIdemTTL
	}
	return &SeqAllocator{c: c, idemTTL: idemTTL, batches: newScriptBatches()}
}

// allocateScript allocates for a batch of sends of one slot group, each as if alone, in the
// order given (DESIGN §11: the batch's keys share the group's slot). For each send it returns
// {'ok', seq, month, msg_id, hash, existing '0'|'1', acked '0'|'1'} and, for a fresh
// allocation, its Redis TIME in ms (seq.Allocation.At), {'noseq'} when the topic counter is
// missing, or {'nomonth'} when no month is active (Redis lost it: the caller re-seeds it from
// the catalog). Nothing of a send is written unless its entry is 'ok', so a failed send
// consumes no seq.
//
// The seq handed out is marked pending in the send's pending key in the same step
// (seq.Request.PendingFor), so no node sees it allocated and unmarked; expired marks are
// pruned there too.
//
// A scheduled early switch that is due is applied first (ports.MonthState.SwitchAt), in the
// same step as the allocation: no seq is handed out in the month before once TIME reached it.
//
// KEYS: the group's active_month, ready_months, switch_month; then per send idem, seq
// counter, pending. ARGV per send (eight): msg_id, hash, idem TTL ms,
// reallocate '0'|'1', month override (empty: use Redis TIME), floor month (empty: none; a
// table the catalog made writable, so it joins the ready set), attempt, pending ms (empty: no
// mark).
var allocateScript = rueidis.NewLuaScript(luaAdvance + luaDueSwitch + luaUTCMonth + `
-- One TIME per call at most: the months and the pending marks read the same clock. What is
-- derived from it is derived once per call too (issue 30 part 2: turning a number into a
-- string costs Redis about what a redis.call does): the ms, the calendar month, and each
-- decimal string of the ms plus an offset.
local time, now_ms, utc_now
local ms_strs = {}
local function clock()
  if not time then
    time = redis.call('TIME')
  end
  return time
end
local function clock_ms()
  if not now_ms then
    local t = clock()
    now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  end
  return now_ms
end
local function clock_ms_str(plus)
  local s = ms_strs[plus]
  if not s then
    s = string.format('%d', clock_ms() + plus)
    ms_strs[plus] = s
  end
  return s
end
local active_key, ready_key, switch_key = KEYS[1], KEYS[2], KEYS[3]
-- What the call's earlier sends learnt, so that the sends of one call (issue 30 part 2) read
-- each key once: active_key's value, whether the switch was looked at (on one clock it is due
-- for the first send or for none), the seq counters known to exist, and each pending key's
-- PTTL after its last mark (present once the key was pruned at this call's clock).
local active_now, switch_seen
local seq_exists, pending_ttl = {}, {}
local function allocate(idem_key, seq_key, pending_key, a)
  local function mark(s)
    if ARGV[a + 8] == '' then
      return
    end
    local ttl = tonumber(ARGV[a + 8])
    local pttl = pending_ttl[pending_key]
    if pttl then
      redis.call('ZADD', pending_key, clock_ms_str(ttl), s .. ':' .. ARGV[a + 7])
    else
      -- Settled sends leave no marks, so the key is often gone (-2): nothing to prune then.
      pttl = redis.call('PTTL', pending_key)
      local pruned = pttl ~= -2 and redis.call('ZREMRANGEBYSCORE', pending_key, '-inf', clock_ms_str(0)) > 0
      redis.call('ZADD', pending_key, clock_ms_str(ttl), s .. ':' .. ARGV[a + 7])
      if pruned then
        -- Pruning may have emptied the key, so ZADD made a new one without an expiry.
        pttl = redis.call('PTTL', pending_key)
      end
    end
    -- Never shorten: a node configured with a longer request timeout marked before.
    if pttl < ttl then
      redis.call('PEXPIRE', pending_key, ARGV[a + 8])
      pttl = ttl
    end
    pending_ttl[pending_key] = pttl
  end
  local rec = redis.call('HMGET', idem_key, 'seq', 'month', 'msg_id', 'hash', 'state')
  local msg_id, hash = ARGV[a + 1], ARGV[a + 2]
  if rec[1] then
    if ARGV[a + 4] ~= '1' then
      if rec[5] ~= 'acked' then
        mark(rec[1])
      end
      return {'ok', rec[1], rec[2], rec[3], rec[4], '1', rec[5] == 'acked' and '1' or '0'}
    end
    -- A reallocation only replaces the seq: the msg_id and hash of the first attempt stay.
    msg_id, hash = rec[3], rec[4]
  end
  if not seq_exists[seq_key] then
    if redis.call('EXISTS', seq_key) == 0 then
      return {'noseq'}
    end
    seq_exists[seq_key] = true
  end
  -- A missing active_month is never set here from the clock: after a loss it may have been
  -- ahead of the calendar (an early switch), and only the catalog knows (ports.SeqAllocator).
  local current = active_now or redis.call('GET', active_key)
  if not current then
    return {'nomonth'}
  end
  if not switch_seen then
    current = due_switch(active_key, ready_key, switch_key, current, clock_ms())
    switch_seen = true
  end
  local floor = ARGV[a + 6]
  if floor ~= '' and tonumber(current) < tonumber(floor) then
    redis.call('SADD', ready_key, floor)
    redis.call('SET', active_key, floor)
    current = floor
  end
  local now = ARGV[a + 5]
  if now == '' then
    utc_now = utc_now or utc_month(tonumber(clock()[1]))
    now = utc_now
  end
  local active = advance(active_key, ready_key, now, current)
  if not active then
    return {'nomonth'}
  end
  active_now = active
  -- INCR comes back as a Lua double, exact below 2^53 (and only there, since rounding keeps
  -- order): formatted there, read back with GET past it (lua.go).
  local n = redis.call('INCR', seq_key)
  local s = n < 9007199254740992 and string.format('%d', n) or redis.call('GET', seq_key)
  redis.call('HSET', idem_key, 'seq', s, 'month', active, 'msg_id', msg_id, 'hash', hash, 'state', 'allocated')
  redis.call('PEXPIRE', idem_key, ARGV[a + 3])
  mark(s)
  return {'ok', s, active, msg_id, hash, '0', '0', clock_ms_str(0)}
end
local out = {}
for i = 1, (#KEYS - 3) / 3 do
  local k = 3 * i + 1
  out[i] = allocate(KEYS[k], KEYS[k + 1], KEYS[k + 2], 8 * (i - 1)) -- 8 ARGV per send
end
return out
`)

// Allocate runs the allocation script; see ports.SeqAllocator. Sends of one slot group share
// a call: while one call of the group is in flight, the sends that come meanwhile wait for it
// and go together in the next (scriptBatches), so a lone send waits for nothing.
func (s *SeqAllocator) Allocate(ctx context.Context, tenant string, req seq.Request) (seq.Allocation, error) {
	k, err := topicKeys(tenant, req.Topic)
	if err != nil {
		return seq.Allocation{}, fmt.Errorf("allocate seq: %w", err)
	}
	if req.ClientMsgID == "" || req.MsgID <= 0 {
		return seq.Allocation{}, fmt.Errorf("allocate seq for %s: client_msg_id and msg_id are required", req.Topic)
	}
	override := ""
	if req.MonthOverride != 0 {
		if !req.MonthOverride.Valid() {
			return seq.Allocation{}, fmt.Errorf("allocate seq for %s: %w: override %d", req.Topic, month.ErrInvalid, req.MonthOverride)
		}
		override = req.MonthOverride.String()
	}
	floor := ""
	if req.Floor != 0 {
		if !req.Floor.Valid() {
			return seq.Allocation{}, fmt.Errorf("allocate seq for %s: %w: floor %d", req.Topic, month.ErrInvalid, req.Floor)
		}
		floor = req.Floor.String()
	}
	reallocate := "0"
	if req.Reallocate {
		reallocate = "1"
	}
	pending := ""
	if req.Attempt != "" && req.PendingFor > 0 {
		pending = strconv.FormatInt(max(req.PendingFor.Milliseconds(), 1), 10)
	}
	call := newBatchedCall([]string{k.Idem(req.Topic, req.From, req.ClientMsgID), k.Seq(req.Topic), k.Pending(req.Topic)},
		[]string{strconv.FormatInt(req.MsgID, 10), req.Hash, strconv.FormatInt(s.idemTTL.Milliseconds(), 10), reallocate,
			override, floor, req.Attempt, pending})
	reply, err := s.batches.do(ctx, k.ActiveMonth(), call, scriptExec(s.c, allocateScript, k.ActiveMonth(), k.ReadyMonths(), k.SwitchMonth()))
	if err != nil {
		return seq.Allocation{}, fmt.Errorf("allocate seq for %s in %s: %w", req.Topic, tenant, err)
	}
	alloc, err := parseAllocation(reply)
	if err != nil {
		return seq.Allocation{}, fmt.Errorf("allocate seq for %s in %s: %w", req.Topic, tenant, err)
	}
	return alloc, nil
}

// parseAllocation reads the reply of allocateScript.
func parseAllocation(reply []string) (seq.Allocation, error) {
	if len(reply) == 0 {
		return seq.Allocation{}, errors.New("empty script reply")
	}
	switch reply[0] {
	case "noseq":
		return seq.Allocation{}, seq.ErrCounterMissing
	case "nomonth":
		return seq.Allocation{}, seq.ErrNoActiveMonth
	case "ok":
	default:
		return seq.Allocation{}, fmt.Errorf("unexpected script status %q", reply[0])
	}
	if len(reply) != 7 && len(reply) != 8 {
		return seq.Allocation{}, fmt.Errorf("script reply has %d fields, want 7 or 8", len(reply))
	}
	n, err := strconv.ParseInt(reply[1], 10, 64)
	if err != nil {
		return seq.Allocation{}, fmt.Errorf("seq %q: %w", reply[1], err)
	}
	m, err := month.Parse(reply[2])
	if err != nil {
		return seq.Allocation{}, fmt.Errorf("month: %w", err)
	}
	msgID, err := strconv.ParseInt(reply[3], 10, 64)
	if err != nil {
		return seq.Allocation{}, fmt.Errorf("msg_id %q: %w", reply[3], err)
	}
	a := seq.Allocation{
		Seq: n, Month: m, MsgID: msgID, Hash: reply[4],
		Existing: reply[5] == "1", Acked: reply[6] == "1",
	}
	if len(reply) == 8 {
		ms, err := strconv.ParseInt(reply[7], 10, 64)
		if err != nil {
			return seq.Allocation{}, fmt.Errorf("allocation time %q: %w", reply[7], err)
		}
		a.At = time.UnixMilli(ms).UTC()
	}
	return a, nil
}

// reseedScript raises the counter to ARGV[1] when it is missing or lower; it never lowers it.
var reseedScript = rueidis.NewLuaScript(luaDecLess + `
local cur = redis.call('GET', KEYS[1])
if not cur or dec_less(cur, ARGV[1]) then
  redis.call('SET', KEYS[1], ARGV[1])
end
return redis.status_reply('OK')
`)

// Reseed raises the topic counter to at least floor (the highest seq MySQL holds).
func (s *SeqAllocator) Reseed(ctx context.Context, tenant, topic string, floor int64) error {
	k, err := topicKeys(tenant, topic)
	if err != nil {
		return fmt.Errorf("reseed: %w", err)
	}
	if floor < 0 {
		return fmt.Errorf("reseed %s: negative floor %d", topic, floor)
	}
	err = reseedScript.Exec(ctx, s.c, []string{k.Seq(topic)}, []string{strconv.FormatInt(floor, 10)}).Error()
	if err != nil {
		return fmt.Errorf("reseed %s in %s to %d: %w", topic, tenant, floor, err)
	}
	return nil
}

// pendingSeqsScript returns 1 when an unexpired mark of KEYS[1] has a seq in [ARGV[1], ARGV[2]].
var pendingSeqsScript = rueidis.NewLuaScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local from, to = tonumber(ARGV[1]), tonumber(ARGV[2])
for _, m in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. now, '+inf')) do
  local s = tonumber(string.match(m, '^(%d+):'))
  if s and s >= from and s <= to then
    return 1
  end
end
return 0
`)

// Pending reports whether a send of a seq in [from, to] still runs on any node; see
// ports.PendingSeqs. The marks are compared with Redis TIME, the clock that set them.
func (s *SeqAllocator) Pending(ctx context.Context, tenant, topic string, from, to int64) (bool, error) {
	k, err := topicKeys(tenant, topic)
	if err != nil {
		return false, fmt.Errorf("pending seqs: %w", err)
	}
	n, err := pendingSeqsScript.Exec(ctx, s.c, []string{k.Pending(topic)},
		[]string{strconv.FormatInt(from, 10), strconv.FormatInt(to, 10)}).AsInt64()
	if err != nil {
		return false, fmt.Errorf("pending seqs %d..%d of %s in %s: %w", from, to, topic, tenant, err)
	}
	return n == 1, nil
}

// Settle removes one attempt's mark; see ports.PendingSeqs.
func (s *SeqAllocator) Settle(ctx context.Context, tenant, topic string, seqNo int64, attempt string) error {
	k, err := topicKeys(tenant, topic)
	if err != nil {
		return fmt.Errorf("settle seq: %w", err)
	}
	if err := s.c.Do(ctx, s.c.B().Zrem().Key(k.Pending(topic)).Member(pendingMember(seqNo, attempt)).Build()).Error(); err != nil {
		return fmt.Errorf("settle seq %d of %s in %s: %w", seqNo, topic, tenant, err)
	}
	return nil
}

// pendingMember is the pending ZSET's member of one attempt's mark at a seq, as allocateScript
// writes it.
func pendingMember(seqNo int64, attempt string) string {
	return strconv.FormatInt(seqNo, 10) + ":" + attempt
}
