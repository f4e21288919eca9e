package task

import (
	"testing"
	"time"
)

// The wait after a failed delivery attempt doubles per attempt and is
// spread over the upper half of its step, so that deliveries failing
// together (a receiver down) do not all come back at once.
func TestHookBackoffJitter(t *testing.T) {
	base := 4 * time.Second
	for n := 1; n <= 6; n++ {
		step := base << (n - 1)
		seen := map[time.Duration]bool{}
		for range 200 {
			d := hookBackoff(base, n)
			if d < step/2 || d > step {
				t.Fatalf("attempt %d: wait %s outside [%s, %s]", n, d, step/2, step)
			}
			seen[d] = true
		}
		if len(seen) < 100 {
			t.Errorf("attempt %d: %d distinct waits of 200: no jitter", n, len(seen))
		}
	}
	// A shift past the duration's range stays positive.
	if d := hookBackoff(time.Hour, 40); d <= 0 {
		t.Errorf("attempt 40: wait %s", d)
	}
}
