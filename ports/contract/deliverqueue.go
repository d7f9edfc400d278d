package contract

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/imdhq/imd/core/domain/delivery"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/ports"
)

// DeliverFixture is a deliver queue with one partition and one fresh tenant.
type DeliverFixture struct {
	Tenant string
	Queue  ports.DeliverQueue
	// Split returns a queue on the same jobs with n partitions, as a node restarted with
	// another partition count sees them, or the error of a count no queue can have.
	Split func(n int) (ports.DeliverQueue, error)
}

func (f DeliverFixture) split(t *testing.T, n int) ports.DeliverQueue {
	t.Helper()
	q, err := f.Split(n)
	if err != nil {
		t.Fatalf("split into %d partitions: %v", n, err)
	}
	return q
}

// deliverWait bounds how long a suite Take blocks when a job is expected.
const deliverWait = 2 * time.Second

// DeliverQueue checks ports.DeliverQueue, the reliable queue of seed 003 §12: FIFO per
// partition, a topic's jobs in one partition, taken jobs stay in processing until acked, a boot
// requeues them and moves the jobs of another partition count, failing jobs end as dead
// letters. fresh must return a new tenant on every call.
func DeliverQueue(t *testing.T, fresh func(t *testing.T) DeliverFixture) {
	t.Run("jobs come out in push order with receipts", func(t *testing.T) {
		t.Parallel()
		f := fresh(t)
		jobs := deliverPushN(t, f, 3)
		for _, want := range jobs {
			got := deliverTake(t, f)
			if got.Receipt == "" {
				t.Fatalf("job %d has no receipt", got.MsgID)
			}
			deliverSame(t, got, want)
		}
		deliverEmpty(t, f)
	})

	t.Run("every field survives the queue", func(t *testing.T) {
		t.Parallel()
		f := fresh(t)
		want := delivery.Job{
			Tenant: f.Tenant, Kind: delivery.KindMessage, MsgID: 1<<62 + 1, Topic: "grp_9", ConversationID: 4,
			From: 5, ExcludeDevice: 1<<63 + 7, NotPush: true, NotMailbox: true, Recipients: []int64{5, 6},
			Message: &message.Message{
				Topic: "grp_9", GroupID: 9, ConversationID: 4, Seq: 12, MsgID: 1<<62 + 1, From: 5,
				ClientMsgID: "c-1", Type: "text", Content: json.RawMessage(`{"text":"hi"}`), Mentions: []int64{6},
				Status: message.StatusNormal, Version: 1, CreatedAt: time.Date(2031, 6, 1, 2, 3, 4, 5e6, time.UTC), Month: 203106,
			},
			Event:    json.RawMessage(`{"k":1}`),
			Attempts: 2,
		}
		deliverPush(t, f, want)
		deliverSame(t, deliverTake(t, f), want)
	})

	t.Run("push stamps the job and retry keeps the stamp", func(t *testing.T) {
		t.Parallel()
		f := fresh(t)
		before := time.Now().Add(-time.Minute).UnixMilli() // the memory fake's clock may lag
		deliverPushN(t, f, 1)
		job := deliverTake(t, f)
		if job.QueuedAt < before || job.QueuedAt > time.Now().Add(time.Minute).UnixMilli() {
			t.Fatalf("QueuedAt = %d; want about now (%d)", job.QueuedAt, time.Now().UnixMilli())
		}
		if _, err := f.Queue.Retry(t.Context(), job, 5); err != nil {
			t.Fatalf("Retry: %v", err)
		}
		if again := deliverTake(t, f); again.QueuedAt != job.QueuedAt {
			t.Fatalf("QueuedAt after a retry = %d; want %d", again.QueuedAt, job.QueuedAt)
		}
	})

	t.Run("take times out on an empty queue", func(t *testing.T) {
		t.Parallel()
		f := fresh(t)
		const timeout = 200 * time.Millisecond
		start := time.Now()
		if job, ok, err := f.Queue.Take(t.Context(), f.Tenant, 0, timeout); err != nil || ok {
			t.Fatalf("Take = %+v, %v, %v; want a timeout", job, ok, err)
		}
		if waited := time.Since(start); waited < timeout/2 || waited > timeout+deliverWait {
			t.Fatalf("Take waited %v; want about %v", waited, timeout)
		}
		deliverEmpty(t, f)
	})

	t.Run("take waits for a push", func(t *testing.T) {
		t.Parallel()
		f := fresh(t)
		want := deliverJob(f.Tenant, 1)
		pushed := make(chan error, 1)
		go func() {
			time.Sleep(100 * time.Millisecond)
			pushed <- f.Queue.Push(t.Context(), want)
		}()
		deliverSame(t, deliverTake(t, f), want)
		if err := <-pushed; err != nil {
			t.Fatalf("Push: %v", err)
		}
	})

	t.Run("ack removes the job for good", func(t *testing.T) {
		t.Parallel()
		f := fresh(t)
		deliverPushN(t, f, 1)
		job := deliverTake(t, f)
		for range 2 { // acking twice is harmless
			if err := f.Queue.Ack(t.Context(), job); err != nil {
				t.Fatalf("Ack: %v", err)
			}
		}
		deliverRequeue(t, f, 0)
		deliverEmpty(t, f)
	})

	t.Run("take more takes what is there, in order, up to the maximum", func(t *testing.T) {
		t.Parallel()
		f := fresh(t)
		jobs := deliverPushN(t, f, 5)
		deliverSame(t, deliverTake(t, f), jobs[0])
		next := 1
		for _, step := range []struct{ max, want int }{{0, 0}, {3, 3}, {10, 1}, {10, 0}} {
			got, err := f.Queue.TakeMore(t.Context(), f.Tenant, 0, step.max)
			if err != nil || len(got) != step.want {
				t.Fatalf("TakeMore(%d) = %d jobs, %v; want %d", step.max, len(got), err, step.want)
			}
			for _, job := range got {
				if job.Receipt == "" {
					t.Fatalf("job %d has no receipt", job.MsgID)
				}
				deliverSame(t, job, jobs[next])
				next++
			}
		}
		// Taken jobs are in processing: a boot puts all five back.
		deliverRequeue(t, f, 5)
		if _, err := f.Queue.TakeMore(t.Context(), f.Tenant, 1, 1); err == nil {
			t.Error("TakeMore of a partition out of range succeeded")
		}
	})

	t.Run("ack takes several jobs at once", func(t *testing.T) {
		t.Parallel()
		f := fresh(t)
		q := f.split(t, 3)
		deliverTopicJobs(t, q, f.Tenant, 6, 2)
		var taken []delivery.Job
		for p := range q.Partitions() {
			for {
				job, ok, err := q.Take(t.Context(), f.Tenant, p, 0)
				if err != nil {
					t.Fatalf("Take(partition %d): %v", p, err)
				}
				if !ok {
					break
				}
				taken = append(taken, job)
			}
		}
		if err := q.Ack(t.Context(), taken...); err != nil {
			t.Fatalf("Ack of %d jobs: %v", len(taken), err)
		}
		deliverRequeueOf(t, q, f.Tenant, 0)
		deliverEmptyQueue(t, q, f.Tenant)
	})

	t.Run("requeue puts taken jobs back at the head in order", func(t *testing.T) {
		t.Parallel()
		f := fresh(t)
		jobs := deliverPushN(t, f, 4)
		deliverTake(t, f)
		deliverTake(t, f)
		deliverRequeue(t, f, 2)
		for _, want := range jobs {
			deliverSame(t, deliverTake(t, f), want)
		}
		deliverEmpty(t, f)
	})

	t.Run("retry counts attempts and dead-letters after the maximum", func(t *testing.T) {
		t.Parallel()
		f := fresh(t)
		const maxAttempts = 3
		deliverPushN(t, f, 1)
		for failures := range maxAttempts {
			job := deliverTake(t, f)
			if job.Attempts != failures {
				t.Fatalf("attempts = %d; want %d", job.Attempts, failures)
			}
			dead, err := f.Queue.Retry(t.Context(), job, maxAttempts)
			if err != nil || dead != (failures == maxAttempts-1) {
				t.Fatalf("Retry after %d failures = %v, %v; want dead=%v", failures+1, dead, err, failures == maxAttempts-1)
			}
		}
		deliverRequeue(t, f, 0)
		deliverEmpty(t, f)
	})

	t.Run("retry of a requeued job does not duplicate it", func(t *testing.T) {
		t.Parallel()
		f := fresh(t)
		want := deliverPushN(t, f, 1)[0]
		job := deliverTake(t, f)
		deliverRequeue(t, f, 1)
		if dead, err := f.Queue.Retry(t.Context(), job, 1); err != nil || dead {
			t.Fatalf("Retry of a requeued job = %v, %v; want false, nil", dead, err)
		}
		deliverSame(t, deliverTake(t, f), want)
		deliverEmpty(t, f)
	})

	t.Run("ack and retry need a taken job", func(t *testing.T) {
		t.Parallel()
		f := fresh(t)
		job := deliverJob(f.Tenant, 1)
		if err := f.Queue.Ack(t.Context(), job); err == nil {
			t.Error("Ack of a job never taken succeeded")
		}
		if _, err := f.Queue.Retry(t.Context(), job, 3); err == nil {
			t.Error("Retry of a job never taken succeeded")
		}
	})

	t.Run("mark done is true once per key", func(t *testing.T) {
		t.Parallel()
		f := fresh(t)
		steps := []struct {
			keys  []string
			first []bool
		}{
			{[]string{"m1"}, []bool{true}},
			{[]string{"m1"}, []bool{false}},
			{[]string{"m2", "read1", "m1"}, []bool{true, true, false}},
			{[]string{"m3", "m3"}, []bool{true, false}},
			{nil, []bool{}},
		}
		for _, st := range steps {
			first, err := f.Queue.MarkDone(t.Context(), f.Tenant, time.Minute, st.keys...)
			if err != nil || !reflect.DeepEqual(first, st.first) {
				t.Fatalf("MarkDone(%v) = %v, %v; want %v", st.keys, first, err, st.first)
			}
		}
		if _, err := f.Queue.MarkDone(t.Context(), f.Tenant, time.Minute, "m4", ""); err == nil {
			t.Error("MarkDone with an empty key succeeded")
		}
		if _, err := f.Queue.MarkDone(t.Context(), f.Tenant, 0, "m5"); err == nil {
			t.Error("MarkDone without ttl succeeded")
		}
	})

	t.Run("done reads the marks and sets none", func(t *testing.T) {
		t.Parallel()
		f := fresh(t)
		if _, err := f.Queue.MarkDone(t.Context(), f.Tenant, time.Minute, "m1", "read1"); err != nil {
			t.Fatal(err)
		}
		for range 2 { // a read sets nothing
			done, err := f.Queue.Done(t.Context(), f.Tenant, "m1", "m2", "read1")
			if err != nil || !reflect.DeepEqual(done, []bool{true, false, true}) {
				t.Fatalf("Done(m1, m2, read1) = %v, %v; want [true false true]", done, err)
			}
		}
		if first, err := f.Queue.MarkDone(t.Context(), f.Tenant, time.Minute, "m2"); err != nil || !first[0] {
			t.Fatalf("MarkDone(m2) after Done read it = %v, %v; want first", first, err)
		}
	})

	t.Run("a topic's jobs share a partition, in push order", func(t *testing.T) {
		t.Parallel()
		f := fresh(t)
		const partitions = 4
		q := f.split(t, partitions)
		if q.Partitions() != partitions {
			t.Fatalf("Partitions = %d; want %d", q.Partitions(), partitions)
		}
		pushed := deliverTopicJobs(t, q, f.Tenant, 12, 5)
		taken := deliverDrain(t, q, f.Tenant)
		deliverSameTopicOrder(t, taken, pushed, partitions)
	})

	t.Run("a queue has 1 to delivery.MaxPartitions partitions", func(t *testing.T) {
		t.Parallel()
		f := fresh(t)
		for _, n := range []int{-1, 0, delivery.MaxPartitions + 1} {
			if _, err := f.Split(n); err == nil {
				t.Errorf("split into %d partitions succeeded", n)
			}
		}
		if q := f.split(t, delivery.MaxPartitions); q.Partitions() != delivery.MaxPartitions {
			t.Errorf("Partitions = %d; want %d", q.Partitions(), delivery.MaxPartitions)
		}
	})

	t.Run("take needs a partition in range", func(t *testing.T) {
		t.Parallel()
		f := fresh(t)
		q := f.split(t, 3)
		for _, p := range []int{-1, 3} {
			if _, _, err := q.Take(t.Context(), f.Tenant, p, 0); err == nil {
				t.Errorf("Take(partition %d of 3) succeeded", p)
			}
		}
	})

	t.Run("requeue covers every partition", func(t *testing.T) {
		t.Parallel()
		f := fresh(t)
		const partitions = 3
		q := f.split(t, partitions)
		pushed := deliverTopicJobs(t, q, f.Tenant, 9, 3)
		deliverRequeueOf(t, q, f.Tenant, 0) // records the count; nothing to move yet
		taken := 0
		for p := range partitions {
			if _, ok, err := q.Take(t.Context(), f.Tenant, p, 0); err != nil {
				t.Fatalf("Take(partition %d): %v", p, err)
			} else if ok {
				taken++
			}
		}
		deliverRequeueOf(t, q, f.Tenant, taken)
		deliverSameTopicOrder(t, deliverDrain(t, q, f.Tenant), pushed, partitions)
	})

	for _, c := range []struct{ from, to int }{{1, 4}, {4, 2}, {3, 5}} {
		t.Run(fmt.Sprintf("a changed partition count %d→%d moves every job, each topic in order", c.from, c.to), func(t *testing.T) {
			t.Parallel()
			f := fresh(t)
			old := f.split(t, c.from)
			deliverRequeueOf(t, old, f.Tenant, 0)
			pushed := deliverTopicJobs(t, old, f.Tenant, 10, 4)
			for p := range c.from { // one taken job per partition, as a crashed node leaves them
				if _, _, err := old.Take(t.Context(), f.Tenant, p, 0); err != nil {
					t.Fatalf("Take(partition %d): %v", p, err)
				}
			}
			q := f.split(t, c.to)
			// The taken jobs count twice: back to their old partition, then over to the new.
			deliverRequeueOf(t, q, f.Tenant, c.from+len(pushed))
			deliverSameTopicOrder(t, deliverDrain(t, q, f.Tenant), pushed, c.to)
			deliverEmptyQueue(t, old, f.Tenant)
			// The old count was forgotten: a later boot moves nothing more.
			deliverRequeueOf(t, q, f.Tenant, 0)
		})
	}

	t.Run("bad tenants are rejected", func(t *testing.T) {
		t.Parallel()
		f := fresh(t)
		if err := f.Queue.Push(t.Context(), deliverJob("Bad}", 1)); err == nil {
			t.Error("Push to a bad tenant succeeded")
		}
		if _, _, err := f.Queue.Take(t.Context(), "", 0, 0); err == nil {
			t.Error("Take from an empty tenant name succeeded")
		}
	})
}

func deliverJob(tenant string, n int) delivery.Job {
	return delivery.Job{Tenant: tenant, Kind: delivery.KindMessage, MsgID: int64(n), Topic: "grp_1", From: 7}
}

func deliverPush(t *testing.T, f DeliverFixture, job delivery.Job) {
	t.Helper()
	if err := f.Queue.Push(t.Context(), job); err != nil {
		t.Fatalf("Push(%d): %v", job.MsgID, err)
	}
}

// deliverPushN pushes jobs 1..n and returns them.
func deliverPushN(t *testing.T, f DeliverFixture, n int) []delivery.Job {
	t.Helper()
	jobs := make([]delivery.Job, n)
	for i := range jobs {
		jobs[i] = deliverJob(f.Tenant, i+1)
		deliverPush(t, f, jobs[i])
	}
	return jobs
}

func deliverTake(t *testing.T, f DeliverFixture) delivery.Job {
	t.Helper()
	return deliverTakeFrom(t, f.Queue, f.Tenant, 0)
}

func deliverTakeFrom(t *testing.T, q ports.DeliverQueue, tenant string, partition int) delivery.Job {
	t.Helper()
	job, ok, err := q.Take(t.Context(), tenant, partition, deliverWait)
	if err != nil || !ok {
		t.Fatalf("Take = %v, %v; want a job", ok, err)
	}
	return job
}

// deliverEmpty checks nothing is queued, without waiting.
func deliverEmpty(t *testing.T, f DeliverFixture) {
	t.Helper()
	deliverEmptyQueue(t, f.Queue, f.Tenant)
}

// deliverEmptyQueue checks no partition of q holds a job, without waiting.
func deliverEmptyQueue(t *testing.T, q ports.DeliverQueue, tenant string) {
	t.Helper()
	for p := range q.Partitions() {
		if job, ok, err := q.Take(t.Context(), tenant, p, 0); err != nil || ok {
			t.Fatalf("Take(partition %d) = %+v, %v, %v; want an empty queue", p, job, ok, err)
		}
	}
}

func deliverRequeue(t *testing.T, f DeliverFixture, want int) {
	t.Helper()
	deliverRequeueOf(t, f.Queue, f.Tenant, want)
}

func deliverRequeueOf(t *testing.T, q ports.DeliverQueue, tenant string, want int) {
	t.Helper()
	if n, err := q.RequeueStale(t.Context(), tenant); err != nil || n != want {
		t.Fatalf("RequeueStale = %d, %v; want %d", n, err, want)
	}
}

// deliverTopicJobs pushes perTopic jobs to each of topics group topics, the topics interleaved,
// and returns them in push order. A job's MsgID is unique; its Attempts field numbers it
// within its topic.
func deliverTopicJobs(t *testing.T, q ports.DeliverQueue, tenant string, topics, perTopic int) []delivery.Job {
	t.Helper()
	var jobs []delivery.Job
	for n := range perTopic {
		for g := range topics {
			job := delivery.Job{
				Tenant: tenant, Kind: delivery.KindMessage, MsgID: int64(1000*g + n + 1),
				Topic: fmt.Sprintf("grp_%d", g+1), From: 7, Attempts: n,
			}
			if err := q.Push(t.Context(), job); err != nil {
				t.Fatalf("Push(%d): %v", job.MsgID, err)
			}
			jobs = append(jobs, job)
		}
	}
	return jobs
}

// takenJob is a job and the partition it came from.
type takenJob struct {
	job       delivery.Job
	partition int
}

// deliverDrain takes every job of every partition, partition by partition, and leaves the
// queue empty.
func deliverDrain(t *testing.T, q ports.DeliverQueue, tenant string) []takenJob {
	t.Helper()
	var out []takenJob
	for p := range q.Partitions() {
		for {
			job, ok, err := q.Take(t.Context(), tenant, p, 0)
			if err != nil {
				t.Fatalf("Take(partition %d): %v", p, err)
			}
			if !ok {
				break
			}
			if err := q.Ack(t.Context(), job); err != nil {
				t.Fatalf("Ack: %v", err)
			}
			out = append(out, takenJob{job, p})
		}
	}
	return out
}

// deliverSameTopicOrder checks that taken holds the pushed jobs, each in the partition of its
// topic, and each topic's in push order.
func deliverSameTopicOrder(t *testing.T, taken []takenJob, pushed []delivery.Job, partitions int) {
	t.Helper()
	if len(taken) != len(pushed) {
		t.Fatalf("took %d jobs; pushed %d", len(taken), len(pushed))
	}
	want := map[string][]int64{}
	for _, j := range pushed {
		want[j.Topic] = append(want[j.Topic], j.MsgID)
	}
	got := map[string][]int64{}
	for _, tj := range taken {
		if p := delivery.PartitionOf(tj.job.Topic, partitions); tj.partition != p {
			t.Fatalf("job %d of %s came from partition %d; its topic's is %d", tj.job.MsgID, tj.job.Topic, tj.partition, p)
		}
		got[tj.job.Topic] = append(got[tj.job.Topic], tj.job.MsgID)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("jobs by topic = %v; want %v", got, want)
	}
}

// deliverSame compares jobs without their receipts and stamps, which only the queue sets.
func deliverSame(t *testing.T, got, want delivery.Job) {
	t.Helper()
	got.Receipt, want.Receipt = "", ""
	got.QueuedAt, want.QueuedAt = 0, 0
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("job = %+v; want %+v", got, want)
	}
}
