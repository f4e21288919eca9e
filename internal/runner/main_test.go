package runner

import (
	"testing"

	"github.com/leatdev/leat/internal/tools/redistest"
)

// TestMain runs the tests against a redis-server of their own and checks
// for leaked goroutines.
func TestMain(m *testing.M) { redistest.Main(m) }
