package background

import (
	"context"
	"testing"
)

func TestBackgroundRunsFromStartUntilStop(t *testing.T) {
	started, returned := make(chan struct{}), make(chan struct{})
	b := New(func(ctx context.Context) {
		close(started)
		<-ctx.Done()
		close(returned)
	})
	if err := b.Stop(t.Context()); err != nil {
		t.Fatalf("Stop before Start: %v", err)
	}
	startCtx, cancel := context.WithCancel(t.Context())
	if err := b.Start(startCtx); err != nil {
		t.Fatal(err)
	}
	cancel() // the start context ending does not stop the work
	<-started
	select {
	case <-returned:
		t.Fatal("run returned when the start context ended")
	default:
	}
	if err := b.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-returned:
	default:
		t.Fatal("Stop returned before run did")
	}
}
