package redistest

import (
	"testing"
	"time"
)

// Eventually polls cond every 10ms until it holds, and fails tb when d
// passes first, saying what it waited for. Tests synchronise on conditions
// with it, never on fixed sleeps.
func Eventually(tb testing.TB, d time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
