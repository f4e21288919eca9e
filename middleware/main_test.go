package middleware_test

import (
	"os"
	"testing"

	"github.com/leatdev/leat/internal/tools/redistest"
)

func TestMain(m *testing.M) {
	// The rate limit test starts this test binary again as worker processes.
	if os.Getenv(rateWorkerEnv) != "" {
		os.Exit(rateWorkerMain())
	}
	redistest.Main(m)
}
