package runner

import (
	"testing"
	"time"

	"github.com/leatdev/leat/executor"
	"github.com/leatdev/leat/internal/core"
	"github.com/leatdev/leat/internal/lease"
)

func TestTrustArithmetic(t *testing.T) {
	for _, exp := range []time.Duration{300 * time.Millisecond, 2 * time.Second, 10 * time.Second, time.Minute} {
		o := executor.Options{LockExpiry: exp}
		// Two refreshes in a row may fail before trust runs out.
		if trust := exp - lease.Margin(exp); trust <= 2*refreshEvery(o) {
			t.Errorf("expiry %s: trust %s leaves no room for two failed refreshes every %s", exp, trust, refreshEvery(o))
		}
		if lease.Margin(exp) < exp/100 {
			t.Errorf("expiry %s: margin %s below the clock-rate allowance", exp, lease.Margin(exp))
		}
		if heartbeatEvery(o) > time.Second || heartbeatEvery(o) > exp/3 {
			t.Errorf("expiry %s: heartbeat every %s", exp, heartbeatEvery(o))
		}
	}
}

// nextID is the smallest entry ID after its argument: where a recheck
// starts (fetchState.recheck).
func TestNextID(t *testing.T) {
	for _, tc := range []struct{ id, want string }{
		{"", "0-0"},
		{"0-0", "0-1"},
		{"1700000000000-9", "1700000000000-10"},
		{"5-18446744073709551615", "6-0"},
		{"junk", "0-0"},
	} {
		got := nextID(tc.id)
		if got != tc.want {
			t.Errorf("nextID(%q) = %q, want %q", tc.id, got, tc.want)
		}
		if tc.id != "" && tc.id != "junk" && core.CompareIDs(got, tc.id) <= 0 {
			t.Errorf("nextID(%q) = %q is not after it", tc.id, got)
		}
	}
}
