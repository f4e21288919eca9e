package subprocess_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/task/subprocess"
)

// TestExecReady: an Exec is not ready until a process said ready (Warm
// starts one ahead of tasks), nor while its processes fail to start.
func TestExecReady(t *testing.T) {
	ex := newExec(t, subprocess.Config{})
	if err := ex.Ready(); !errors.Is(err, subprocess.ErrNotReady) {
		t.Fatalf("before any process: %v", err)
	}
	if err := ex.Warm(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if err := ex.Ready(); err != nil {
		t.Fatalf("after Warm: %v", err)
	}
	if st := ex.Stats(); st.Running != 1 || st.Started != 1 {
		t.Fatalf("%+v", st)
	}

	// Processes that never say ready.
	never := newExec(t, subprocess.Config{
		Env:          []string{"STARTS_FILE=" + filepath.Join(t.TempDir(), "starts"), "READY_AT=1000"},
		StartTimeout: 50 * time.Millisecond, BackoffMin: 10 * time.Millisecond, BackoffMax: 20 * time.Millisecond,
	})
	ctx, cancel := context.WithCancel(ctxT(t))
	done := make(chan error, 1)
	go func() { done <- never.Warm(ctx) }()
	redistest.Eventually(t, 10*time.Second, "a failed start", func() bool { return never.Stats().Started >= 2 })
	if err := never.Ready(); !errors.Is(err, subprocess.ErrNotReady) {
		t.Fatalf("failing processes: %v", err)
	}
	cancel()
	if err := <-done; err == nil {
		t.Fatal("Warm succeeded")
	}
}
