package cmd

import (
	"bytes"
	"context"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// A command interrupted before it finished exits 128+signal (130 for
// SIGINT, 143 for SIGTERM); one that stops cleanly on the signal, as a
// worker or a server does, keeps its own status; without a signal the
// status is the command's.
func TestInterruptedCommandStatus(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		sig    os.Signal
		status int // the command's own status once its context ends
		want   int
	}{
		{"interrupt", syscall.SIGINT, exitFailure, 130},
		{"terminate", syscall.SIGTERM, exitFailure, 143},
		{"graceful stop", syscall.SIGINT, exitOK, exitOK},
		{"no signal", nil, exitUsage, exitUsage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sigs := make(chan os.Signal, 1)
			var restored atomic.Bool
			got := runInterruptible(sigs, func() { restored.Store(true) }, func(ctx context.Context) int {
				if tc.sig == nil {
					return tc.status
				}
				sigs <- tc.sig
				<-ctx.Done()
				return tc.status
			})
			if got != tc.want {
				t.Fatalf("status %d, want %d", got, tc.want)
			}
			if restored.Load() != (tc.sig != nil) {
				t.Fatalf("default signal handling restored: %v", restored.Load())
			}
		})
	}
}

// Ctrl-C during "leat tasks wait" exits 130 with one line on stderr.
func TestInterruptedWait(t *testing.T) {
	t.Parallel()
	s := newShop(t)
	runTaskWorker(t, s)
	r := run(t, nil, "", s.args("enqueue", "greet", `{"name":"block"}`)...)
	if r.status != 0 {
		t.Fatalf("enqueue: %+v", r)
	}
	id := strings.TrimSpace(r.stdout)
	sigs := make(chan os.Signal, 1)
	var stdout, stderr bytes.Buffer
	status := runInterruptible(sigs, func() {}, func(ctx context.Context) int {
		go func() {
			// The signal arrives while the command waits: once the task
			// runs (the command checked it exists and is not ended).
			deadline := time.Now().Add(10 * time.Second)
			for time.Now().Before(deadline) &&
				!strings.Contains(run(t, nil, "", s.args("tasks", "show", "--json", id)...).stdout, `"state":"running"`) {
				time.Sleep(10 * time.Millisecond)
			}
			sigs <- syscall.SIGINT
		}()
		return Run(ctx, nil, append([]string{"leat"}, s.args("tasks", "wait", id)...), strings.NewReader(""), &stdout, &stderr)
	})
	if status != 130 || !strings.HasPrefix(stderr.String(), "leat: interrupted") || strings.Count(stderr.String(), "\n") != 1 {
		t.Fatalf("status %d, stderr %q", status, stderr.String())
	}
}
