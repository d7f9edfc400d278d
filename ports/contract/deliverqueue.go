package contract

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"imd/core/delivery"
	"imd/core/message"
	"imd/ports"
)

// DeliverFixture is a deliver queue and one fresh tenant.
type DeliverFixture struct {
	Tenant string
	Queue  ports.DeliverQueue
}

// deliverWait bounds how long a suite Take blocks when a job is expected.
const deliverWait = 2 * time.Second

// DeliverQueue checks ports.DeliverQueue, the reliable queue of seed 003 §12: FIFO, taken jobs
// stay in processing until acked, a boot requeues them, failing jobs end as dead letters.
// fresh must return a new tenant on every call.
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

	t.Run("take times out on an empty queue", func(t *testing.T) {
		t.Parallel()
		f := fresh(t)
		const timeout = 200 * time.Millisecond
		start := time.Now()
		if job, ok, err := f.Queue.Take(t.Context(), f.Tenant, timeout); err != nil || ok {
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
			key   string
			first bool
		}{{"m1", true}, {"m1", false}, {"m2", true}, {"read1", true}, {"m2", false}}
		for _, st := range steps {
			first, err := f.Queue.MarkDone(t.Context(), f.Tenant, st.key, time.Minute)
			if err != nil || first != st.first {
				t.Fatalf("MarkDone(%s) = %v, %v; want %v", st.key, first, err, st.first)
			}
		}
		if _, err := f.Queue.MarkDone(t.Context(), f.Tenant, "", time.Minute); err == nil {
			t.Error("MarkDone with an empty key succeeded")
		}
		if _, err := f.Queue.MarkDone(t.Context(), f.Tenant, "m3", 0); err == nil {
			t.Error("MarkDone without ttl succeeded")
		}
	})

	t.Run("bad tenants are rejected", func(t *testing.T) {
		t.Parallel()
		f := fresh(t)
		if err := f.Queue.Push(t.Context(), deliverJob("Bad}", 1)); err == nil {
			t.Error("Push to a bad tenant succeeded")
		}
		if _, _, err := f.Queue.Take(t.Context(), "", 0); err == nil {
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
	job, ok, err := f.Queue.Take(t.Context(), f.Tenant, deliverWait)
	if err != nil || !ok {
		t.Fatalf("Take = %v, %v; want a job", ok, err)
	}
	return job
}

// deliverEmpty checks nothing is queued, without waiting.
func deliverEmpty(t *testing.T, f DeliverFixture) {
	t.Helper()
	if job, ok, err := f.Queue.Take(t.Context(), f.Tenant, 0); err != nil || ok {
		t.Fatalf("Take = %+v, %v, %v; want an empty queue", job, ok, err)
	}
}

func deliverRequeue(t *testing.T, f DeliverFixture, want int) {
	t.Helper()
	if n, err := f.Queue.RequeueStale(t.Context(), f.Tenant); err != nil || n != want {
		t.Fatalf("RequeueStale = %d, %v; want %d", n, err, want)
	}
}

// deliverSame compares jobs without their receipts, which only the queue sets.
func deliverSame(t *testing.T, got, want delivery.Job) {
	t.Helper()
	got.Receipt, want.Receipt = "", ""
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("job = %+v; want %+v", got, want)
	}
}
