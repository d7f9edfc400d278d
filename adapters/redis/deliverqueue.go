package redis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"imd/core/delivery"
	"imd/ports"
)

// requeueBatch bounds how many jobs one script call moves, so a huge processing list never
// blocks Redis for long.
const requeueBatch = 1000

// DeliverQueue is ports.DeliverQueue on the list trio deliver:queue / deliver:processing /
// deliver:dead of each tenant (seed 003 §12). Jobs are stored as JSON; the exact string a
// worker took is its receipt, so Ack and Retry remove exactly that entry.
type DeliverQueue struct {
	c rueidis.Client
}

var _ ports.DeliverQueue = (*DeliverQueue)(nil)

// NewDeliverQueue returns the queue on c.
func NewDeliverQueue(c rueidis.Client) *DeliverQueue { return &DeliverQueue{c: c} }

// Push appends the job to its tenant's queue.
func (q *DeliverQueue) Push(ctx context.Context, job delivery.Job) error {
	k, err := KeysOf(job.Tenant)
	if err != nil {
		return fmt.Errorf("push deliver job: %w", err)
	}
	raw, err := json.Marshal(job)
	if err != nil {
		return fmt.Errorf("encode deliver job %d: %w", job.MsgID, err)
	}
	if err := q.c.Do(ctx, q.c.B().Rpush().Key(k.DeliverQueue()).Element(string(raw)).Build()).Error(); err != nil {
		return fmt.Errorf("push deliver job %d in %s: %w", job.MsgID, job.Tenant, err)
	}
	return nil
}

// Take moves the oldest job to processing, waiting up to timeout (BLMOVE; rueidis runs
// blocking commands on its own connection pool, so the pipelined connections never stall).
// timeout ≤ 0 does not wait. A job that is not valid JSON is moved to the dead-letter list,
// since no retry can ever decode it.
func (q *DeliverQueue) Take(ctx context.Context, tenant string, timeout time.Duration) (delivery.Job, bool, error) {
	k, err := KeysOf(tenant)
	if err != nil {
		return delivery.Job{}, false, fmt.Errorf("take deliver job: %w", err)
	}
	var cmd rueidis.Completed
	if timeout > 0 {
		cmd = q.c.B().Blmove().Source(k.DeliverQueue()).Destination(k.DeliverProcessing()).Left().Right().Timeout(timeout.Seconds()).Build()
	} else {
		cmd = q.c.B().Lmove().Source(k.DeliverQueue()).Destination(k.DeliverProcessing()).Left().Right().Build()
	}
	raw, err := q.c.Do(ctx, cmd).ToString()
	if rueidis.IsRedisNil(err) {
		return delivery.Job{}, false, nil
	}
	if err != nil {
		return delivery.Job{}, false, fmt.Errorf("take deliver job in %s: %w", tenant, err)
	}
	var job delivery.Job
	if err := json.Unmarshal([]byte(raw), &job); err != nil {
		if _, buryErr := q.move(ctx, k.DeliverProcessing(), k.DeliverDead(), raw, raw); buryErr != nil {
			return delivery.Job{}, false, fmt.Errorf("undecodable deliver job in %s left in processing: %w", tenant, errors.Join(err, buryErr))
		}
		return delivery.Job{}, false, fmt.Errorf("undecodable deliver job in %s moved to dead letters: %w", tenant, err)
	}
	job.Receipt = raw
	return job, true, nil
}

// Ack removes a taken job from processing. Acking twice is harmless.
func (q *DeliverQueue) Ack(ctx context.Context, job delivery.Job) error {
	k, err := takenKeys(job)
	if err != nil {
		return fmt.Errorf("ack deliver job: %w", err)
	}
	if err := q.c.Do(ctx, q.c.B().Lrem().Key(k.DeliverProcessing()).Count(1).Element(job.Receipt).Build()).Error(); err != nil {
		return fmt.Errorf("ack deliver job %d in %s: %w", job.MsgID, job.Tenant, err)
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

// Retry puts a taken job back at the queue's tail with Attempts+1, or on the dead-letter list
// once it has failed maxAttempts times. A job no longer in processing (requeued after a
// restart) is left where it is: dead=false, nothing pushed.
func (q *DeliverQueue) Retry(ctx context.Context, job delivery.Job, maxAttempts int) (bool, error) {
	k, err := takenKeys(job)
	if err != nil {
		return false, fmt.Errorf("retry deliver job: %w", err)
	}
	next := job
	next.Attempts++
	raw, err := json.Marshal(next)
	if err != nil {
		return false, fmt.Errorf("encode deliver job %d: %w", job.MsgID, err)
	}
	dead := next.Attempts >= maxAttempts
	target := k.DeliverQueue()
	if dead {
		target = k.DeliverDead()
	}
	moved, err := q.move(ctx, k.DeliverProcessing(), target, job.Receipt, string(raw))
	if err != nil {
		return false, fmt.Errorf("retry deliver job %d in %s: %w", job.MsgID, job.Tenant, err)
	}
	return dead && moved, nil
}

func (q *DeliverQueue) move(ctx context.Context, from, to, old, next string) (bool, error) {
	n, err := moveScript.Exec(ctx, q.c, []string{from, to}, []string{old, next}).AsInt64()
	return n == 1, err
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

// RequeueStale moves everything left in processing back to the head of the queue (boot after
// a crash) and returns how many jobs moved.
func (q *DeliverQueue) RequeueStale(ctx context.Context, tenant string) (int, error) {
	k, err := KeysOf(tenant)
	if err != nil {
		return 0, fmt.Errorf("requeue stale deliver jobs: %w", err)
	}
	total := 0
	for {
		n, err := requeueScript.Exec(ctx, q.c, []string{k.DeliverProcessing(), k.DeliverQueue()}, []string{strconv.Itoa(requeueBatch)}).AsInt64()
		if err != nil {
			return total, fmt.Errorf("requeue stale deliver jobs in %s: %w", tenant, err)
		}
		total += int(n)
		if n < requeueBatch {
			return total, nil
		}
	}
}

// MarkDone sets deliver:done:{key} if absent (SET NX PX); first=false means it was set before.
func (q *DeliverQueue) MarkDone(ctx context.Context, tenant, key string, ttl time.Duration) (bool, error) {
	k, err := KeysOf(tenant)
	if err != nil {
		return false, fmt.Errorf("mark deliver job done: %w", err)
	}
	if key == "" || ttl < time.Millisecond {
		return false, fmt.Errorf("mark deliver job done in %s: need a key and a ttl ≥ 1ms, got %q, %v", tenant, key, ttl)
	}
	err = q.c.Do(ctx, q.c.B().Set().Key(k.DeliverDone(key)).Value("1").Nx().Px(ttl).Build()).Error()
	if rueidis.IsRedisNil(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("mark deliver job %s done in %s: %w", key, tenant, err)
	}
	return true, nil
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
