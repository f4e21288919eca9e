package app_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/executor"
	"github.com/leatdev/leat/stream"
)

// Run returns even when a processor ignores its context: after the grace
// period and a bounded extra wait, with an error naming the processor and
// the partition; the entry stays pending for the next owner.
func TestRunReturnsWhenAProcessorIgnoresItsContext(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	a, s := env.newApp(1, func(c *app.Config) { c.Processing.Grace = 300 * time.Millisecond })
	release := make(chan struct{})
	defer close(release)
	started := make(chan struct{}, 1)
	err := app.Process(a, s, "stuck", func(ctx context.Context, events *stream.Events[event]) error {
		for range events.All() {
			started <- struct{}{}
			<-release // ignores ctx
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	sendEvents(t, s, []string{"k"}, 1, 0)
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("event not processed")
	}
	cancel()
	select {
	case err = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return with a processor ignoring its context")
	}
	if !errors.Is(err, executor.ErrProcessorStuck) || !strings.Contains(err.Error(), `processor "stuck", partition 0`) {
		t.Fatalf("Run returned %v, want executor.ErrProcessorStuck naming the processor and partition", err)
	}
	key := app.Keys(a).Partition("events", 0)
	if n := env.client.XPending(context.Background(), key, "stuck").Val().Count; n != 1 {
		t.Fatalf("%d entries pending, want the abandoned one", n)
	}
}
