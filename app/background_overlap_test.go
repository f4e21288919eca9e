package app_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/tools/redistest"
)

// Runs of a task never overlap unless its schedule allows it: a run that
// outlasts the interval delays the next one, and each overrun is logged
// once with the task and the run's duration.
func TestBackgroundOverlap(t *testing.T) {
	t.Parallel()
	for _, overlap := range []bool{false, true} {
		t.Run(map[bool]string{false: "not allowed", true: "allowed"}[overlap], func(t *testing.T) {
			t.Parallel()
			env := newEnv(t)
			var logs redistest.Log
			a, _ := env.newApp(1, func(c *app.Config) { c.Logger = slog.New(slog.NewTextHandler(&logs, nil)) })
			var mu sync.Mutex
			running, most, runs := 0, 0, 0
			err := a.Background("slow", func(ctx context.Context) error {
				mu.Lock()
				running++
				runs++
				most = max(most, running)
				mu.Unlock()
				select {
				case <-ctx.Done():
				case <-time.After(130 * time.Millisecond):
				}
				mu.Lock()
				running--
				mu.Unlock()
				return nil
			}, app.Schedule{Every: 50 * time.Millisecond, Overlap: overlap})
			if err != nil {
				t.Fatal(err)
			}
			w := startWorker(t, a)
			redistest.Eventually(t, 10*time.Second, "5 runs", func() bool { mu.Lock(); defer mu.Unlock(); return runs >= 5 })
			if err := w.stop(t); err != nil {
				t.Fatal(err)
			}
			overruns := 0
			for _, line := range strings.Split(logs.String(), "\n") {
				if strings.Contains(line, `msg="background task overran its schedule"`) && strings.Contains(line, " task=slow duration=") {
					overruns++
				}
			}
			mu.Lock()
			defer mu.Unlock()
			switch {
			case !overlap && (most != 1 || overruns < runs-1 || overruns > runs):
				t.Fatalf("%d runs, at most %d at once, %d overruns logged; want 1 at once, one log per overrun:\n%s", runs, most, overruns, logs.String())
			case overlap && (most < 2 || overruns != 0):
				t.Fatalf("%d runs, at most %d at once, %d overruns logged; want runs overlapping, no overrun", runs, most, overruns)
			}
		})
	}
}

// A six-field cron schedule runs every second, on the second.
func TestBackgroundCronSeconds(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	a, _ := env.newApp(1, nil)
	var mu sync.Mutex
	var ticks []time.Time
	var late []time.Duration
	err := a.Background("each-second", func(ctx context.Context) error {
		tick, _ := app.ScheduledTime(ctx)
		mu.Lock()
		ticks = append(ticks, tick)
		late = append(late, time.Since(tick))
		mu.Unlock()
		return nil
	}, app.Schedule{Cron: "CRON_TZ=Europe/Paris * * * * * *"})
	if err != nil {
		t.Fatal(err)
	}
	w := startWorker(t, a)
	redistest.Eventually(t, 5*time.Second, "2 runs", func() bool { mu.Lock(); defer mu.Unlock(); return len(ticks) >= 2 })
	if err := w.stop(t); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for i, tick := range ticks {
		if tick.Nanosecond() != 0 || late[i] < 0 || late[i] > 500*time.Millisecond || i > 0 && tick.Sub(ticks[i-1]) != time.Second {
			t.Fatalf("ticks %v, started %v after them", ticks, late)
		}
	}
}
