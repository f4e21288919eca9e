package task_test

import (
	"os"
	"testing"
	"time"

	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/task"
)

func TestMain(m *testing.M) {
	// The crash tests start this test binary again as a worker process.
	if os.Getenv(workerModeEnv) != "" {
		os.Exit(workerProcessMain())
	}
	task.SetFlowTimings(100*time.Millisecond, time.Second, 300*time.Millisecond)
	redistest.Main(m)
}
