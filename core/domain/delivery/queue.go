package delivery

import "fmt"

// MaxPartitions bounds the partitions of a deliver queue: each costs a consumer per node and
// a blocking connection.
const MaxPartitions = 1024

// CheckPartitions refuses a partition count a queue cannot be split into. Every queue
// implementation applies it, so a count the real queue refuses is refused by the fake too.
func CheckPartitions(n int) error {
	if n < 1 || n > MaxPartitions {
		return fmt.Errorf("deliver queue: %d partitions, want 1 to %d", n, MaxPartitions)
	}
	return nil
}

// Retried is the job after one more failed attempt, and whether that attempt was its last of
// maxAttempts, so that it becomes a dead letter instead of going back to its partition.
func (j Job) Retried(maxAttempts int) (next Job, dead bool) {
	j.Attempts++
	return j, j.Attempts >= maxAttempts
}
