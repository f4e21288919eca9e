package stream

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/leatdev/leat/internal/rdb"
)

// Change logs and global tables.
const (
	// maxChanges bounds KeepChanges.
	maxChanges = 1_000_000
	// DefaultGlobalMaxKeys and DefaultGlobalMaxBytes bound a global
	// table that sets no GlobalMaxKeys or GlobalMaxBytes.
	DefaultGlobalMaxKeys  = 100_000
	DefaultGlobalMaxBytes = 64 << 20
	// globalBlock is how long a global table's read of the change logs
	// blocks (on one Redis node); globalPoll how often it polls them on
	// Redis Cluster.
	globalBlock = time.Second
	globalPoll  = 100 * time.Millisecond
	globalCount = 1000 // entries per change log and read
)

// Errors of global tables.
var (
	// ErrNoChangeLog is returned by GlobalTable for a table declared
	// without KeepChanges: its commits leave nothing to follow.
	ErrNoChangeLog = errors.New("stream: table keeps no change log")
	// ErrGlobalTooLarge is returned by a global table whose values went
	// past GlobalMaxKeys or GlobalMaxBytes: it stops following the table.
	ErrGlobalTooLarge = errors.New("stream: global table over its size limit")
	// ErrNotReady is returned by Global.Get before the table was loaded.
	ErrNotReady = errors.New("stream: global table not loaded yet")
)

// KeepChanges makes the table keep a change log of about n entries per
// partition (1 to 1,000,000; 0, the default: none), which global tables
// (GlobalTable) follow: each commit that writes the table appends one
// entry with the keys it wrote and their new values, in the step that
// applies them, so the log holds exactly the committed writes, in order.
// It costs each such commit an XADD, and Redis the log's memory (n entries
// of a commit's writes, per partition). Every program that declares the
// table must declare it with the same n (ErrConflict otherwise); the
// processor's workers are the ones that write the log.
func KeepChanges(n int64) TableOption { return func(s *tableSpec) { s.changes = n } }

// A GlobalOption tweaks a global table.
type GlobalOption func(*globalSpec)

type globalSpec struct {
	maxKeys  int
	maxBytes int64
}

// GlobalMaxKeys bounds the keys a global table holds (default
// DefaultGlobalMaxKeys): past it, it fails with ErrGlobalTooLarge.
func GlobalMaxKeys(n int) GlobalOption { return func(s *globalSpec) { s.maxKeys = n } }

// GlobalMaxBytes bounds the bytes of the keys and encoded values a global
// table holds (default DefaultGlobalMaxBytes; decoded values take more):
// past it, it fails with ErrGlobalTooLarge.
func GlobalMaxBytes(n int64) GlobalOption { return func(s *globalSpec) { s.maxBytes = n } }

// Global is an in-memory copy of all partitions of a table, for small
// reference data every worker needs whole (Kafka Streams' GlobalKTable,
// goka's View): Get reads any key without a round trip, from any
// goroutine. Run loads it and keeps it current by following the table's
// change log (KeepChanges); attach it to the app (app.Attach) to have the
// worker run it, or run it yourself. Ready waits until it caught up.
//
// The copy lags the table by the time a committed change takes to reach it
// (one blocking read's round trip on one Redis node; up to 100 ms of
// polling more on Redis Cluster). A follower that missed entries (trimmed
// from a log it fell behind on, or a log deleted by leat reset) finds out
// from the entry's link to the one before it, and loads that partition
// again: the copy converges to the table.
type Global[V any] struct {
	t        *Table[V]
	spec     globalSpec
	logs     []string
	hashes   []string
	running  atomic.Bool
	mu       sync.RWMutex
	parts    []map[string]globalValue[V]
	keys     int
	bytes    int64
	last     []string // per partition: the last change log ID applied
	loads    []int    // per partition: loads done
	loaded   bool
	err      error
	progress chan struct{} // closed and replaced whenever last moves
}

type globalValue[V any] struct {
	v    V
	size int64
}

// GlobalTable returns a global table of t, a table of a stream declared on
// h and kept with a change log (KeepChanges; ErrNoChangeLog otherwise). It
// does no I/O: Run loads and follows it.
func GlobalTable[V any](h Host, t *Table[V], opts ...GlobalOption) (*Global[V], error) {
	if t == nil {
		return nil, errors.New("global table: table is nil")
	}
	if cat := h.Catalog(); cat == nil || cat.c != t.stream.Catalog() {
		return nil, fmt.Errorf("global table %q: its stream %q is not declared on this app", t.name, t.stream.Name())
	}
	if t.changes <= 0 {
		return nil, fmt.Errorf("%w: table %q of processor %q on stream %q: declare it with stream.KeepChanges to read it as a global table",
			ErrNoChangeLog, t.name, t.processor, t.stream.Name())
	}
	spec := globalSpec{maxKeys: DefaultGlobalMaxKeys, maxBytes: DefaultGlobalMaxBytes}
	for _, o := range opts {
		o(&spec)
	}
	if spec.maxKeys < 1 || spec.maxBytes < 1 {
		return nil, fmt.Errorf("global table %q: GlobalMaxKeys and GlobalMaxBytes must be positive", t.name)
	}
	n := t.stream.Partitions()
	g := &Global[V]{t: t, spec: spec, parts: make([]map[string]globalValue[V], n), last: make([]string, n),
		loads: make([]int, n),
		logs:  make([]string, n), hashes: make([]string, n), progress: make(chan struct{})}
	keys := t.stream.Catalog().Keys()
	for p := range n {
		g.logs[p] = keys.TableChanges(t.stream.Name(), t.processor, t.name, p)
		g.hashes[p] = keys.Table(t.stream.Name(), t.processor, t.name, p)
		g.parts[p] = map[string]globalValue[V]{}
	}
	return g, nil
}

// Name names the global table as a service of the app (app.Attach):
// "global.STREAM.PROCESSOR.TABLE".
func (g *Global[V]) Name() string {
	return "global." + g.t.stream.Name() + "." + g.t.processor + "." + g.t.name
}

// Get returns key's value in the copy and whether it holds one. It fails
// with ErrNotReady before the first load, and with Run's error after a
// failure (ErrGlobalTooLarge). Values are shared by all callers: do not
// modify what they refer to (maps, slices, pointers).
func (g *Global[V]) Get(key string) (V, bool, error) {
	p := g.t.stream.PartitionOf([]byte(key))
	g.mu.RLock()
	defer g.mu.RUnlock()
	var zero V
	if g.err != nil {
		return zero, false, g.err
	}
	if !g.loaded {
		return zero, false, fmt.Errorf("%w: %s", ErrNotReady, g.Name())
	}
	v, ok := g.parts[p][key]
	return v.v, ok, nil
}

// Len returns the number of keys the copy holds.
func (g *Global[V]) Len() int {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.keys
}

// Ready waits until the copy holds every change committed to the table
// before Ready was called (it reads where each partition's change log ends,
// then waits for the copy to get there), or ctx ends, or Run fails.
func (g *Global[V]) Ready(ctx context.Context) error {
	if err := g.wait(ctx, func() bool { return g.loaded }); err != nil {
		return err
	}
	ends, err := rdb.ChangeLogEnds(ctx, g.t.stream.Catalog().Client(), g.logs)
	if err != nil {
		return fmt.Errorf("%s: %w", g.Name(), err)
	}
	// A log that ends before the last entry applied was deleted: wait for
	// the partition's next load.
	g.mu.RLock()
	reload := map[int]int{}
	for p, end := range ends {
		if CompareIDs(end, g.last[p]) < 0 {
			reload[p] = g.loads[p]
		}
	}
	g.mu.RUnlock()
	return g.wait(ctx, func() bool {
		for p, end := range ends {
			if n, ok := reload[p]; ok {
				if g.loads[p] == n {
					return false
				}
			} else if CompareIDs(g.last[p], end) < 0 {
				return false
			}
		}
		return true
	})
}

// wait waits until done (called under the read lock) holds, Run failed or
// ctx ended.
func (g *Global[V]) wait(ctx context.Context, done func() bool) error {
	for {
		g.mu.RLock()
		ok, err, ch := done(), g.err, g.progress
		g.mu.RUnlock()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// moved wakes the waiters; called with the write lock held.
func (g *Global[V]) moved() {
	close(g.progress)
	g.progress = make(chan struct{})
}

// fail records err as the table's failure and returns it.
func (g *Global[V]) fail(err error) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.err == nil {
		g.err = err
		g.moved()
	}
	return err
}
