package redis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/redis/rueidis"

	"github.com/imdhq/imd/core/domain/delivery"
	"github.com/imdhq/imd/ports"
)

// requeueBatch bounds how many jobs one script call moves, so a huge processing list never
// blocks Redis for long.
const requeueBatch = 1000

// DeliverQueue is ports.DeliverQueue on the lists deliver:queue / deliver:processing of each
// partition and deliver:dead of each tenant (seed 003 §12). Jobs are stored as JSON; the exact
// string a worker took is its receipt, so Ack and Retry remove exactly that entry.
type DeliverQueue struct {
	c          rueidis.Client
	partitions int
}

var _ ports.DeliverQueue = (*DeliverQueue)(nil)

// NewDeliverQueue returns the queue on c with one partition.
func NewDeliverQueue(c rueidis.Client) *DeliverQueue { return &DeliverQueue{c: c, partitions: 1} }

// WithPartitions returns the queue split into n partitions (delivery.CheckPartitions).
// Every node of a deployment must use the same n: jobs are pushed by it and taken by it. A
// changed n is safe across a restart, because RequeueStale moves the jobs of the old split.
func (q *DeliverQueue) WithPartitions(n int) (*DeliverQueue, error) {
	if err := delivery.CheckPartitions(n); err != nil {
		return nil, err
	}
	return &DeliverQueue{c: q.c, partitions: n}, nil
}

// Partitions is the number of partitions of every tenant's queue.
func (q *DeliverQueue) Partitions() int { return q.partitions }

// Push stamps the job with the node's time and appends it to its topic's partition.
func (q *DeliverQueue) Push(ctx context.Context, job delivery.Job) error {
	key, raw, err := q.pushArgs(job)
	if err != nil {
		return err
	}
	if err := q.c.Do(ctx, q.c.B().Rpush().Key(key).Element(raw).Build()).Error(); err != nil {
		return fmt.Errorf("push deliver job %d in %s: %w", job.MsgID, job.Tenant, err)
	}
	return nil
}

// pushArgs stamps the job with the node's time and returns the list of its topic's partition
// and the job as it is queued.
func (q *DeliverQueue) pushArgs(job delivery.Job) (key, raw string, err error) {
	k, err := KeysOf(job.Tenant)
	if err != nil {
		return "", "", fmt.Errorf("push deliver job: %w", err)
	}
	job.QueuedAt = time.Now().UnixMilli()
	encoded, err := marshalJSON(job)
	if err != nil {
		return "", "", fmt.Errorf("encode deliver job %d: %w", job.MsgID, err)
	}
	return k.DeliverQueueOf(delivery.PartitionOf(job.Topic, q.partitions), q.partitions), string(encoded), nil
}

// Take moves the oldest job of a partition to its processing list, waiting up to timeout
// (BLMOVE; rueidis runs blocking commands on its own connection pool, so the pipelined
// connections never stall). timeout ≤ 0 does not wait. A job that is not valid JSON is moved to
// the dead-letter list, since no retry can ever decode it.
func (q *DeliverQueue) Take(ctx context.Context, tenant string, partition int, timeout time.Duration) (delivery.Job, bool, error) {
	k, err := KeysOf(tenant)
	if err != nil {
		return delivery.Job{}, false, fmt.Errorf("take deliver job: %w", err)
	}
	if partition < 0 || partition >= q.partitions {
		return delivery.Job{}, false, fmt.Errorf("take deliver job in %s: partition %d of %d", tenant, partition, q.partitions)
	}
	queue, processing := k.DeliverQueueOf(partition, q.partitions), k.DeliverProcessingOf(partition, q.partitions)
	var cmd rueidis.Completed
	if timeout > 0 {
		// BLMOVE's timeout is in seconds; one that rounds to 0 would block for ever.
		wait := max(timeout, time.Millisecond).Seconds()
		cmd = q.c.B().Blmove().Source(queue).Destination(processing).Left().Right().Timeout(wait).Build()
	} else {
		cmd = q.c.B().Lmove().Source(queue).Destination(processing).Left().Right().Build()
	}
	raw, err := q.c.Do(ctx, cmd).ToString()
	if rueidis.IsRedisNil(err) {
		return delivery.Job{}, false, nil
	}
	if err != nil {
		return delivery.Job{}, false, fmt.Errorf("take deliver job in %s partition %d: %w", tenant, partition, err)
	}
	job, err := decodeJob(raw)
	if err != nil {
		if _, buryErr := q.move(ctx, processing, k.DeliverDead(PartitionGroup(partition)), raw, raw); buryErr != nil {
			return delivery.Job{}, false, fmt.Errorf("undecodable deliver job in %s left in processing: %w", tenant, errors.Join(err, buryErr))
		}
		return delivery.Job{}, false, fmt.Errorf("undecodable deliver job in %s moved to dead letters: %w", tenant, err)
	}
	job.Receipt = raw
	return job, true, nil
}

// decodeJob reads a queued job with encoding/json v2 (go-json-experiment): a consumer decodes
// every job it takes, and v2 does it in one pass where v1 validates the whole text first and
// then decodes it. Jobs are written by encoding/json (Push, Retry): exact field names and
// valid UTF-8, which v2 reads the same (TestJobsDecodeAsWritten).
func decodeJob(raw string) (delivery.Job, error) {
	var job delivery.Job
	err := jsonv2.Unmarshal([]byte(raw), &job)
	return job, err
}

// takeMoreScript moves up to ARGV[1] jobs from the head of KEYS[1] to the tail of KEYS[2] and
// returns them in order.
var takeMoreScript = rueidis.NewLuaScript(`
local out = {}
for i = 1, tonumber(ARGV[1]) do
  local job = redis.call('LMOVE', KEYS[1], KEYS[2], 'LEFT', 'RIGHT')
  if not job then break end
  out[i] = job
end
return out
`)

// TakeMore moves up to max jobs of a partition to its processing list in one script call. A
// job that is not valid JSON goes to the dead-letter list, as in Take, and the others are
// returned.
func (q *DeliverQueue) TakeMore(ctx context.Context, tenant string, partition, max int) ([]delivery.Job, error) {
	k, err := KeysOf(tenant)
	if err != nil {
		return nil, fmt.Errorf("take deliver jobs: %w", err)
	}
	if partition < 0 || partition >= q.partitions {
		return nil, fmt.Errorf("take deliver jobs in %s: partition %d of %d", tenant, partition, q.partitions)
	}
	if max <= 0 {
		return nil, nil
	}
	queue, processing := k.DeliverQueueOf(partition, q.partitions), k.DeliverProcessingOf(partition, q.partitions)
	raws, err := takeMoreScript.Exec(ctx, q.c, []string{queue, processing}, []string{strconv.Itoa(max)}).AsStrSlice()
	if err != nil {
		return nil, fmt.Errorf("take deliver jobs in %s partition %d: %w", tenant, partition, err)
	}
	jobs := make([]delivery.Job, 0, len(raws))
	var bad []error
	for _, raw := range raws {
		job, err := decodeJob(raw)
		if err != nil {
			if _, buryErr := q.move(ctx, processing, k.DeliverDead(PartitionGroup(partition)), raw, raw); buryErr != nil {
				bad = append(bad, fmt.Errorf("undecodable deliver job in %s left in processing: %w", tenant, errors.Join(err, buryErr)))
			}
			continue
		}
		job.Receipt = raw
		jobs = append(jobs, job)
	}
	return jobs, errors.Join(bad...)
}

// Ack removes taken jobs from processing, in one round trip. Acking twice is harmless.
func (q *DeliverQueue) Ack(ctx context.Context, jobs ...delivery.Job) error {
	cmds := make(rueidis.Commands, len(jobs))
	for i, job := range jobs {
		k, err := takenKeys(job)
		if err != nil {
			return fmt.Errorf("ack deliver job: %w", err)
		}
		processing := k.DeliverProcessingOf(delivery.PartitionOf(job.Topic, q.partitions), q.partitions)
		cmds[i] = q.c.B().Lrem().Key(processing).Count(1).Element(job.Receipt).Build()
	}
	for i, r := range q.c.DoMulti(ctx, cmds...) {
		if err := r.Error(); err != nil {
			return fmt.Errorf("ack deliver job %d in %s: %w", jobs[i].MsgID, jobs[i].Tenant, err)
		}
	}
	return nil
}

// moveScript removes ARGV[1] from KEYS[1] and appends ARGV[2] to KEYS[2] in one step, so a
// crash never leaves a job in both lists or in neither. It returns 0 without pushing when
// ARGV[1] is no longer in KEYS[1] (it was requeued meanwhile and is queued already).
var moveScript = rueidis.NewLuaScript(`
if redis.call('LREM', KEYS[1], 1, ARGV[1]) == 0 then
  return 0
end
redis.call('RPUSH', KEYS[2], ARGV[2])
return 1
`)

// Retry puts a taken job back at its partition's tail with Attempts+1, or on the dead-letter list
// once it has failed maxAttempts times. A job no longer in processing (requeued after a
// restart) is left where it is: dead=false, nothing pushed.
func (q *DeliverQueue) Retry(ctx context.Context, job delivery.Job, maxAttempts int) (bool, error) {
	k, err := takenKeys(job)
	if err != nil {
		return false, fmt.Errorf("retry deliver job: %w", err)
	}
	next, dead := job.Retried(maxAttempts)
	raw, err := json.Marshal(next)
	if err != nil {
		return false, fmt.Errorf("encode deliver job %d: %w", job.MsgID, err)
	}
	p := delivery.PartitionOf(job.Topic, q.partitions)
	target := k.DeliverQueueOf(p, q.partitions)
	if dead {
		target = k.DeliverDead(PartitionGroup(p))
	}
	moved, err := q.move(ctx, k.DeliverProcessingOf(p, q.partitions), target, job.Receipt, string(raw))
	if err != nil {
		return false, fmt.Errorf("retry deliver job %d in %s: %w", job.MsgID, job.Tenant, err)
	}
	return dead && moved, nil
}

func (q *DeliverQueue) move(ctx context.Context, from, to, old, next string) (bool, error) {
	n, err := moveScript.Exec(ctx, q.c, []string{from, to}, []string{old, next}).AsInt64()
	return n == 1, err
}

// RequeueStale moves what every partition's processing list holds back to the head of its
// partition, then the jobs of every other partition count still listed (the configuration
// changed, or the lists predate the split) into the partitions of the current count, and
// returns how many jobs moved. The lists named before the slot groups (Ungrouped*, DESIGN §11)
// are drained like another split's, their dead letters into group 0's. The current count is
// recorded first, so a crash half-way leaves every list that may hold jobs listed for the next
// boot.
func (q *DeliverQueue) RequeueStale(ctx context.Context, tenant string) (int, error) {
	k, err := KeysOf(tenant)
	if err != nil {
		return 0, fmt.Errorf("requeue stale deliver jobs: %w", err)
	}
	if err := q.c.Do(ctx, q.c.B().Sadd().Key(k.DeliverPartitions()).Member(strconv.Itoa(q.partitions)).Build()).Error(); err != nil {
		return 0, fmt.Errorf("record deliver partitions of %s: %w", tenant, err)
	}
	counts, err := q.counts(ctx, k)
	if err != nil {
		return 0, fmt.Errorf("requeue stale deliver jobs in %s: %w", tenant, err)
	}
	total := 0
	step := func(moved int, err error) error {
		total += moved
		return err
	}
	for _, n := range counts {
		for i := range n {
			if err := step(q.requeue(ctx, k.DeliverProcessingOf(i, n), k.DeliverQueueOf(i, n))); err != nil {
				return total, fmt.Errorf("requeue stale deliver jobs in %s: %w", tenant, err)
			}
			if err := step(q.requeue(ctx, k.UngroupedDeliverProcessingOf(i, n), k.UngroupedDeliverQueueOf(i, n))); err != nil {
				return total, fmt.Errorf("requeue stale ungrouped deliver jobs in %s: %w", tenant, err)
			}
			if err := step(q.repartition(ctx, k, k.UngroupedDeliverQueueOf(i, n), PartitionGroup(i))); err != nil {
				return total, fmt.Errorf("move ungrouped deliver jobs in %s: %w", tenant, err)
			}
		}
		if n == q.partitions {
			continue
		}
		for i := range n {
			if err := step(q.repartition(ctx, k, k.DeliverQueueOf(i, n), PartitionGroup(i))); err != nil {
				return total, fmt.Errorf("move deliver jobs of %d partitions in %s: %w", n, tenant, err)
			}
		}
		if err := q.c.Do(ctx, q.c.B().Srem().Key(k.DeliverPartitions()).Member(strconv.Itoa(n)).Build()).Error(); err != nil {
			return total, fmt.Errorf("forget %d deliver partitions of %s: %w", n, tenant, err)
		}
	}
	if _, err := q.drain(ctx, k.UngroupedDeliverDead(), func(string) string { return k.DeliverDead(0) }); err != nil {
		return total, fmt.Errorf("move ungrouped dead letters of %s: %w", tenant, err)
	}
	return total, nil
}

// counts lists the partition counts whose lists may hold jobs, ascending: the recorded ones,
// the current one, and 1, whose lists are those of the versions before the split, which
// recorded nothing.
func (q *DeliverQueue) counts(ctx context.Context, k Keys) ([]int, error) {
	members, err := q.c.Do(ctx, q.c.B().Smembers().Key(k.DeliverPartitions()).Build()).AsStrSlice()
	if err != nil {
		return nil, fmt.Errorf("read deliver partitions: %w", err)
	}
	counts := []int{1, q.partitions}
	for _, m := range members {
		n, err := strconv.Atoi(m)
		if err != nil || delivery.CheckPartitions(n) != nil {
			return nil, fmt.Errorf("deliver partitions: bad count %q", m)
		}
		counts = append(counts, n)
	}
	slices.Sort(counts)
	return slices.Compact(counts), nil
}

// requeueScript moves up to ARGV[1] jobs from processing's tail to the queue's head, which
// keeps their original order in front of everything queued since. KEYS: processing, queue.
var requeueScript = rueidis.NewLuaScript(`
local n, limit = 0, tonumber(ARGV[1])
while n < limit and redis.call('LMOVE', KEYS[1], KEYS[2], 'RIGHT', 'LEFT') do
  n = n + 1
end
return n
`)

func (q *DeliverQueue) requeue(ctx context.Context, processing, queue string) (int, error) {
	total := 0
	for {
		n, err := requeueScript.Exec(ctx, q.c, []string{processing, queue}, []string{strconv.Itoa(requeueBatch)}).AsInt64()
		if err != nil {
			return total, err
		}
		total += int(n)
		if n < requeueBatch {
			return total, nil
		}
	}
}

// repartition empties list, whose partition lives in slot group g, into the partitions of the
// current count, keeping the order of the jobs of each topic: they all sit in one old list,
// and go in order to one new list's tail. An undecodable job goes to group g's dead letters.
func (q *DeliverQueue) repartition(ctx context.Context, k Keys, list string, g int) (int, error) {
	return q.drain(ctx, list, func(raw string) string {
		job, err := decodeJob(raw)
		if err != nil {
			return k.DeliverDead(g) // no retry can ever decode it
		}
		p := delivery.PartitionOf(job.Topic, q.partitions)
		return k.DeliverQueueOf(p, q.partitions)
	})
}

// popHeadScript pops the head of KEYS[1] while it is ARGV[i], i = 1, 2, …, and returns how
// many it popped: it stops at the first job no longer at the head (taken meanwhile).
var popHeadScript = rueidis.NewLuaScript(`
local n = 0
for i = 1, #ARGV do
  if redis.call('LINDEX', KEYS[1], 0) ~= ARGV[i] then return n end
  redis.call('LPOP', KEYS[1])
  n = n + 1
end
return n
`)

// drain moves list to the lists target names, page by page: a page is appended to its targets
// first and popped from list after, by value. The lists are in other slots (DESIGN §11), so
// no one script moves a job; pushing first means a crash or a concurrent drain may queue a
// job twice but never loses one, and the job's done marker makes the copy act once (DESIGN
// §5). It returns how many jobs it popped.
func (q *DeliverQueue) drain(ctx context.Context, list string, target func(raw string) string) (int, error) {
	total := 0
	for {
		raws, err := q.c.Do(ctx, q.c.B().Lrange().Key(list).Start(0).Stop(requeueBatch-1).Build()).AsStrSlice()
		if err != nil {
			return total, err
		}
		if len(raws) == 0 {
			return total, nil
		}
		var order []string
		byTarget := map[string][]string{}
		for _, raw := range raws {
			t := target(raw)
			if byTarget[t] == nil {
				order = append(order, t)
			}
			byTarget[t] = append(byTarget[t], raw)
		}
		cmds := make(rueidis.Commands, len(order))
		for i, t := range order {
			cmds[i] = q.c.B().Rpush().Key(t).Element(byTarget[t]...).Build()
		}
		for _, r := range q.c.DoMulti(ctx, cmds...) {
			if err := r.Error(); err != nil {
				return total, err
			}
		}
		n, err := popHeadScript.Exec(ctx, q.c, []string{list}, raws).AsInt64()
		if err != nil {
			return total, err
		}
		total += int(n)
	}
}

// MarkDone sets deliver:done:{key} of each key if absent (SET NX PX), all in one round trip;
// first[i]=false means keys[i] was set before.
func (q *DeliverQueue) MarkDone(ctx context.Context, tenant string, ttl time.Duration, keys ...string) ([]bool, error) {
	k, err := KeysOf(tenant)
	if err != nil {
		return nil, fmt.Errorf("mark deliver jobs done: %w", err)
	}
	if ttl < time.Millisecond {
		return nil, fmt.Errorf("mark deliver jobs done in %s: need a ttl ≥ 1ms, got %v", tenant, ttl)
	}
	cmds := make(rueidis.Commands, len(keys))
	for i, key := range keys {
		if key == "" {
			return nil, fmt.Errorf("mark deliver jobs done in %s: empty key", tenant)
		}
		cmds[i] = q.c.B().Set().Key(k.DeliverDone(key)).Value("1").Nx().Px(ttl).Build()
	}
	first := make([]bool, len(keys))
	for i, r := range q.c.DoMulti(ctx, cmds...) {
		err := r.Error()
		switch {
		case rueidis.IsRedisNil(err):
		case err != nil:
			return nil, fmt.Errorf("mark deliver job %s done in %s: %w", keys[i], tenant, err)
		default:
			first[i] = true
		}
	}
	return first, nil
}

// Done reads deliver:done:{key} of each key, all in one round trip: one MGET per slot (one on
// one node), where an EXISTS per key cost Redis a command per resent job of a pass after a
// crash (issue 30 part 2).
func (q *DeliverQueue) Done(ctx context.Context, tenant string, keys ...string) ([]bool, error) {
	k, err := KeysOf(tenant)
	if err != nil {
		return nil, fmt.Errorf("read deliver done marks: %w", err)
	}
	names := make([]string, len(keys))
	for i, key := range keys {
		names[i] = k.DeliverDone(key)
	}
	got, err := rueidis.MGet(q.c, ctx, names)
	if err != nil {
		return nil, fmt.Errorf("read deliver done marks of %d jobs in %s: %w", len(keys), tenant, err)
	}
	done := make([]bool, len(keys))
	for i, name := range names {
		v, ok := got[name]
		done[i] = ok && !v.IsNil()
	}
	return done, nil
}

// takenKeys checks a job came from Take before its receipt is used.
func takenKeys(job delivery.Job) (Keys, error) {
	k, err := KeysOf(job.Tenant)
	if err != nil {
		return Keys{}, err
	}
	if job.Receipt == "" {
		return Keys{}, fmt.Errorf("job %d of %s was not taken from the queue (no receipt)", job.MsgID, job.Tenant)
	}
	return k, nil
}
