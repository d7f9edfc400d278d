package delivery

import "testing"

func TestCheckPartitions(t *testing.T) {
	for _, tt := range []struct {
		n  int
		ok bool
	}{{-1, false}, {0, false}, {1, true}, {4, true}, {MaxPartitions, true}, {MaxPartitions + 1, false}} {
		if err := CheckPartitions(tt.n); (err == nil) != tt.ok {
			t.Errorf("CheckPartitions(%d) = %v; want ok=%v", tt.n, err, tt.ok)
		}
	}
}

func TestRetriedCountsTheAttemptAndDeadLettersTheLast(t *testing.T) {
	for _, tt := range []struct {
		attempts, max, wantAttempts int
		wantDead                    bool
	}{
		{0, 3, 1, false},
		{1, 3, 2, false},
		{2, 3, 3, true},
		{5, 3, 6, true}, // a job already past a lowered maximum dies at once
		{0, 1, 1, true},
	} {
		job := Job{MsgID: 7, Attempts: tt.attempts}
		next, dead := job.Retried(tt.max)
		if next.Attempts != tt.wantAttempts || dead != tt.wantDead || next.MsgID != 7 {
			t.Errorf("Job{Attempts: %d}.Retried(%d) = %+v, %v; want attempts %d, dead %v", tt.attempts, tt.max, next, dead, tt.wantAttempts, tt.wantDead)
		}
		if job.Attempts != tt.attempts {
			t.Errorf("Retried changed its receiver")
		}
	}
}
