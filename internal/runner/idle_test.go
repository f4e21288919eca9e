package runner

import (
	"bufio"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leatdev/leat/executor"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/redis/go-redis/v9"
)

// privateRig is a rig on a redis-server of the test's own, so that the
// server's figures (commands, connections) are the executor's alone.
func privateRig(t *testing.T, partitions int) (*rig, *redistest.Server) {
	t.Helper()
	s := redistest.Start(t)
	return rigOn(t, s.Client(t), "idle", partitions, 1000), s
}

// commandCounter counts the commands clients send to a server (MONITOR),
// leaving out those that scripts run.
type commandCounter struct {
	n     atomic.Int64
	mu    sync.Mutex
	byCmd map[string]int
	stop  func()
}

func countCommands(t *testing.T, s *redistest.Server) *commandCounter {
	t.Helper()
	cc := &commandCounter{byCmd: map[string]int{}}
	cc.stop = redistest.Monitor(t, s.Addr, func(line string) {
		if strings.Contains(line, " lua]") {
			return
		}
		cc.n.Add(1)
		if _, rest, ok := strings.Cut(line, "] \""); ok {
			name, _, _ := strings.Cut(rest, "\"")
			cc.mu.Lock()
			cc.byCmd[strings.ToLower(name)]++
			cc.mu.Unlock()
		}
	})
	return cc
}

// clientCount returns the number of connections to c's server, leaving out
// the one asking and MONITOR's.
func clientCount(t *testing.T, c *redis.Client) int {
	t.Helper()
	list, err := c.ClientList(t.Context()).Result()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	sc := bufio.NewScanner(strings.NewReader(list))
	for sc.Scan() {
		if l := sc.Text(); l != "" && !strings.Contains(l, "cmd=client|list") && !strings.Contains(l, "cmd=monitor") {
			n++
		}
	}
	return n
}

// An idle executor holding 256 partitions costs Redis a number of commands
// per lock refresh interval that does not grow with its partitions (one
// script refreshes all its locks, one script reads every partition's
// counters for the trim check), and holds a fixed number of connections
// whatever GOMAXPROCS (the application pool's default size) is.
func TestIdleCostIsConstant(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(16))
	const partitions = 256
	r, s := privateRig(t, partitions)
	// A lock expiry long enough that a loaded machine does not lose locks
	// (their re-acquisition would be counted too).
	opts := executor.Options{LockExpiry: 4 * time.Second, ReadBlock: 4 * time.Second}
	e := r.executor("p", opts, drainAll)
	r.run(e)
	redistest.Eventually(t, 60*time.Second, "all partitions owned", func() bool { return len(e.Owned()) == partitions })
	redistest.Eventually(t, 30*time.Second, "the fetcher waiting on every partition", func() bool { return e.fetch.idle() == partitions })
	cc := countCommands(t, s)
	r.send(7, 3) // a partition with entries, read and acknowledged
	refreshes := e.refreshCount.Load()
	redistest.Eventually(t, 60*time.Second, "six lock refreshes", func() bool { return e.refreshCount.Load() >= refreshes+6 })
	cc.stop()
	intervals := e.refreshCount.Load() - refreshes
	cc.mu.Lock()
	defer cc.mu.Unlock()
	// Per interval (1.33s): a lock refresh, one or two heartbeats, a share
	// of the blocking reads (ReadBlock 4s), of the assignment checks and of
	// the trim check; the entries sent add a read and an ack. One command
	// per partition and interval would be 256.
	if n := cc.n.Load(); n > 10*intervals {
		t.Errorf("%d commands over %d refresh intervals at %d partitions (%v): more than 10 per interval", n, intervals, partitions, cc.byCmd)
	}
	t.Logf("%d commands over %d refresh intervals at %d partitions: %v", cc.n.Load(), intervals, partitions, cc.byCmd)
	// The executor's fixed pools (connections.go): the fetcher's blocking
	// reads and transactions share one connection.
	if n := clientCount(t, r.client); n > ownConns+lockConns {
		t.Errorf("%d connections with GOMAXPROCS 16 at %d partitions, want at most %d", n, partitions, ownConns+lockConns)
	}
}

// idle returns how many partitions wait for new entries in the blocking read.
func (f *fetcher) idle() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, s := range f.parts {
		if s.cursor == "" && !s.hasData && s.last != "" {
			n++
		}
	}
	return n
}
