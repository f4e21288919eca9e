package chaos_test

import (
	"testing"

	"github.com/leatdev/leat/internal/tools/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }
