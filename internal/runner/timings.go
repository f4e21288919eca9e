package runner

import (
	"time"

	"github.com/leatdev/leat/executor"
)

// refreshEvery is how often locks and heartbeats are refreshed: three times
// per expiry, so two refreshes in a row may fail before trust is lost.
func refreshEvery(o executor.Options) time.Duration { return o.LockExpiry / 3 }

// heartbeatEvery is how often an executor refreshes its heartbeat and looks
// for dead members: at most every second, so a crashed executor is found at
// most LockExpiry + 1s after its last heartbeat.
func heartbeatEvery(o executor.Options) time.Duration { return min(o.LockExpiry/3, time.Second) }

// abandonAfter is how long a processor may still run after its context was
// cancelled at the end of the grace period before the executor gives up on
// it (and halts): as long as the grace period, between 1s and 10s.
func abandonAfter(o executor.Options) time.Duration {
	return min(max(o.Grace, time.Second), 10*time.Second)
}
