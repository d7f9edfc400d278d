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

func TestOnCloseActsOnceTheChannelClosesUnlessStopped(t *testing.T) {
	tests := []struct {
		name    string
		closed  bool // the channel closes while the task runs
		wantAct bool
	}{
		{name: "closed: acts", closed: true, wantAct: true},
		{name: "stopped first: does not act", closed: false, wantAct: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			lost, acted := make(chan struct{}), make(chan struct{})
			b := OnClose(lost, func() { close(acted) })
			if err := b.Start(t.Context()); err != nil {
				t.Fatal(err)
			}
			if tc.closed {
				close(lost)
				<-acted
			}
			if err := b.Stop(t.Context()); err != nil {
				t.Fatal(err)
			}
			select {
			case <-acted:
				if !tc.wantAct {
					t.Fatal("acted after Stop without the channel closing")
				}
			default:
				if tc.wantAct {
					t.Fatal("did not act on the closed channel")
				}
			}
		})
	}
}
