package rdb_test

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/leatdev/leat/internal/rdb"
	"github.com/redis/go-redis/v9"
)

// TestRandomOperationsKeyConcurrency runs TestRandomOperations's random
// steps (late outcomes, reclaims, snoozes, cancels, requeues, edits and
// drains included) on a queue of key concurrency 3, and checks after each
// that the counts are exact and that every key keeps its window: no more
// than 3 of its tasks in progress, each among its first 3, each active one
// with its entry pending (a reclaim would find it), and at least as many
// tokens as it has pending tasks among them (no key stuck).
func TestRandomOperationsKeyConcurrency(t *testing.T) {
	if f := randomOperations(t, 3); f.mostActive < 2 {
		t.Fatalf("no key ever had more than %d task active: the steps did not test key concurrency", f.mostActive)
	}
}

// setKeyConcurrency gives the fixture's queue key concurrency n, for its
// enqueues and in its live settings.
func (f *fixture) setKeyConcurrency(n int) {
	f.t.Helper()
	f.enq.KeyConcurrency = n
	if err := rdb.SetKeyConcurrency(f.ctx, f.c, f.ks.TaskConfig("q"), n); err != nil {
		f.t.Fatal(err)
	}
}

// checkWindow verifies the counts and, for each key of a queue of key
// concurrency n, its window.
func (f *fixture) checkWindow(n int) error {
	states := map[string]int64{}
	byKey := map[string]map[string]int{} // key: state: tasks
	iter := f.c.Scan(f.ctx, 0, f.ks.TaskPrefix("q")+"*", 1000).Iterator()
	for iter.Next(f.ctx) {
		v := f.c.HMGet(f.ctx, iter.Val(), "s", "k").Val()
		st, _ := v[0].(string)
		states[st]++
		if k, _ := v[1].(string); k != "" {
			if byKey[k] == nil {
				byKey[k] = map[string]int{}
			}
			byKey[k][st]++
		}
	}
	for st, c := range f.counts() {
		want, _ := strconv.ParseInt(c, 10, 64)
		if want != states[st] {
			return fmt.Errorf("count of %s is %d, scan %d", st, want, states[st])
		}
	}
	stream := f.ks.TaskStream("q", 0)
	last := f.lastDelivered(stream)
	pending := map[string]bool{}
	for _, p := range f.c.XPendingExt(f.ctx, &redis.XPendingExtArgs{Stream: stream, Group: rdb.TaskGroup, Start: "-", End: "+", Count: 100_000}).Val() {
		pending[p.ID] = true
	}
	tokens := map[string]int{}
	for _, m := range f.c.XRange(f.ctx, stream, "-", "+").Val() {
		if k, ok := m.Values["k"].(string); ok && (pending[m.ID] || idAfter(m.ID, last)) {
			tokens[k]++
		}
	}
	for i := range 3 {
		k := "k" + strconv.Itoa(i)
		if a := byKey[k]["active"]; a > n {
			return fmt.Errorf("key %s has %d tasks active, above %d", k, a, n)
		}
		f.mostActive = max(f.mostActive, byKey[k]["active"])
		line := f.c.LRange(f.ctx, f.ks.TaskKeyPrefix("q")+k, 0, -1).Val()
		inWindow, waiting := 0, 0
		for pos, id := range line {
			v := f.c.HMGet(f.ctx, f.ks.TaskPrefix("q")+id, "s", "x").Val()
			st, _ := v[0].(string)
			if x, _ := v[1].(string); st == "active" && !pending[x] {
				// its entry is gone: nobody would reclaim it
				return fmt.Errorf("key %s: task %s is active with entry %s, not pending", k, id, x)
			}
			switch st {
			case "active", "retrying", "scheduled":
				if pos >= n {
					return fmt.Errorf("key %s: task %s %s at %d in its line %v, beyond its window of %d", k, id, st, pos, line, n)
				}
				inWindow++
			case "pending":
				if pos < n {
					waiting++
				}
			}
		}
		if waiting > tokens[k] {
			return fmt.Errorf("key %s: %d pending tasks in its window (line %v) and %d tokens", k, waiting, line, tokens[k])
		}
		if inWindow+waiting > n {
			return fmt.Errorf("key %s: %d tasks in its window", k, inWindow+waiting)
		}
	}
	return nil
}
