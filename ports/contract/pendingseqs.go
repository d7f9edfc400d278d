package contract

import (
	"testing"
	"time"

	"github.com/imdhq/imd/core/domain/seq"
)

// PendingSeqs checks ports.PendingSeqs together with the allocation that sets its marks
// (seq.Request.Attempt). fresh must return a new tenant on every call, with Pending and
// FollowUp set.
func PendingSeqs(t *testing.T, fresh func(t *testing.T) SeqFixture) {
	ready := func(t *testing.T) SeqFixture {
		f := fresh(t)
		activate(t, f, seqMonth)
		for _, tp := range []string{"grp_1", "grp_2"} {
			if err := f.Seq.Reseed(t.Context(), f.Tenant, tp, 0); err != nil {
				t.Fatalf("Reseed(%s, 0): %v", tp, err)
			}
		}
		return f
	}
	marked := func(req seq.Request, attempt string) seq.Request {
		req.Attempt, req.PendingFor = attempt, time.Minute
		return req
	}
	pending := func(t *testing.T, f SeqFixture, topic string, from, to int64) bool {
		t.Helper()
		ok, err := f.Pending.Pending(t.Context(), f.Tenant, topic, from, to)
		if err != nil {
			t.Fatalf("Pending(%s, %d, %d): %v", topic, from, to, err)
		}
		return ok
	}
	settle := func(t *testing.T, f SeqFixture, topic string, n int64, attempt string) {
		t.Helper()
		if err := f.Pending.Settle(t.Context(), f.Tenant, topic, n, attempt); err != nil {
			t.Fatalf("Settle(%s, %d, %s): %v", topic, n, attempt, err)
		}
	}

	t.Run("an allocation marks its seq of its topic only", func(t *testing.T) {
		t.Parallel()
		f := ready(t)
		seqAllocate(t, f, seqReq("grp_1", 1)) // unmarked: no attempt
		a := seqAllocate(t, f, marked(seqReq("grp_1", 2), "a"))
		for _, tt := range []struct {
			topic    string
			from, to int64
			want     bool
		}{
			{"grp_1", 1, 1, false},
			{"grp_1", 2, 2, true},
			{"grp_1", 1, 5, true},
			{"grp_1", 3, 9, false},
			{"grp_2", 1, 9, false},
		} {
			if got := pending(t, f, tt.topic, tt.from, tt.to); got != tt.want {
				t.Errorf("Pending(%s, %d..%d) = %v, want %v (seq %d marked)", tt.topic, tt.from, tt.to, got, tt.want, a.Seq)
			}
		}
	})

	t.Run("settling one attempt keeps a retry's mark", func(t *testing.T) {
		t.Parallel()
		f := ready(t)
		first := seqAllocate(t, f, marked(seqReq("grp_1", 1), "first"))
		retry := seqAllocate(t, f, marked(seqReq("grp_1", 1), "retry"))
		if !retry.Existing || retry.Seq != first.Seq {
			t.Fatalf("retry = %+v, want the first allocation %+v", retry, first)
		}
		settle(t, f, "grp_1", first.Seq, "first")
		if !pending(t, f, "grp_1", first.Seq, first.Seq) {
			t.Fatal("the retry's mark went with the first attempt's")
		}
		settle(t, f, "grp_1", first.Seq, "retry")
		if pending(t, f, "grp_1", first.Seq, first.Seq) {
			t.Fatal("a seq is pending after every attempt settled")
		}
		settle(t, f, "grp_1", first.Seq, "retry") // settling twice is harmless
	})

	t.Run("a retry of an acked send marks nothing", func(t *testing.T) {
		t.Parallel()
		f := ready(t)
		req := seqReq("grp_1", 1)
		a := seqAllocate(t, f, req)
		seqMarkAcked(t, f, req)
		if r := seqAllocate(t, f, marked(req, "retry")); !r.Acked {
			t.Fatalf("retry = %+v, want acked", r)
		}
		if pending(t, f, "grp_1", a.Seq, a.Seq) {
			t.Fatal("an acked seq was marked pending")
		}
	})

	t.Run("a mark expires after PendingFor", func(t *testing.T) {
		t.Parallel()
		f := ready(t)
		req := seqReq("grp_1", 1)
		req.Attempt, req.PendingFor = "a", 50*time.Millisecond
		a := seqAllocate(t, f, req)
		deadline := time.Now().Add(30 * time.Second)
		for pending(t, f, "grp_1", a.Seq, a.Seq) {
			if time.Now().After(deadline) {
				t.Fatal("a mark outlived its PendingFor by 30 s")
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}
