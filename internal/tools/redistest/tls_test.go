package redistest_test

import (
	"context"
	"testing"

	"github.com/leatdev/leat/internal/tools/redistest"
)

func TestStartTLS(t *testing.T) {
	t.Parallel()
	for _, mutual := range []bool{false, true} {
		s := redistest.StartTLS(t, mutual)
		if err := s.Client(t).Ping(context.Background()).Err(); err != nil {
			t.Fatalf("mutual %v: %v", mutual, err)
		}
	}
}
