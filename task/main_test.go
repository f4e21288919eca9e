package task_test

import (
	"os"
	"testing"

	"github.com/leatdev/leat/internal/redistest"
)

func TestMain(m *testing.M) {
	// The crash tests start this test binary again as a worker process.
	if os.Getenv(workerModeEnv) != "" {
		os.Exit(workerProcessMain())
	}
	redistest.Main(m)
}
