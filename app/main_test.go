package app_test

import (
	"os"
	"testing"

	"github.com/leatdev/leat/internal/tools/redistest"
)

func TestMain(m *testing.M) {
	// The crash tests start this test binary again as a worker process.
	if os.Getenv(workerModeEnv) != "" {
		os.Exit(workerProcessMain())
	}
	if os.Getenv(ownerModeEnv) != "" {
		os.Exit(ownerProcessMain())
	}
	if os.Getenv(joinModeEnv) != "" {
		os.Exit(joinProcessMain())
	}
	if os.Getenv(bgModeEnv) != "" {
		os.Exit(bgProcessMain())
	}
	redistest.Main(m)
}
