package rdb_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/leatdev/leat/internal/rdb"
	"github.com/redis/go-redis/v9"
)

// TestRandomOperations runs random enqueues, fetches, outcomes (late ones
// included), reclaims, promotions, cancels, requeues, edits, drains and
// cleans
// (in calls of two, so every cursor is crossed), and checks after
// each that the counts equal a scan of the task hashes, and that every key
// of the keyed tasks has exactly the tokens it should: one while its first
// task is pending or active, none while it waits for a retry or after a
// snooze, or is empty.
// LEAT_TEST_SEED picks another sequence; LEAT_TEST_LONG=1 makes it longer.
func TestRandomOperations(t *testing.T) { randomOperations(t, 1) }

// randomOperations runs TestRandomOperations's steps on a queue whose key
// concurrency is n, checked after each step by check (n = 1) or by
// checkWindow.
func randomOperations(t *testing.T, n int) *fixture {
	f := newFixture(t)
	check := f.check
	if n > 1 {
		f.setKeyConcurrency(n)
		check = func() error { return f.checkWindow(n) }
	}
	seed := uint64(1)
	if v, err := strconv.ParseUint(os.Getenv("LEAT_TEST_SEED"), 10, 64); err == nil {
		seed = v
	}
	r := rand.New(rand.NewPCG(seed, 2))
	steps := 600
	if os.Getenv("LEAT_TEST_LONG") != "" {
		steps = 5000
	}
	type run struct {
		consumer string
		f        rdb.Fetched
	}
	var runs []run
	var ids []string
	kinds := []string{rdb.OK, rdb.OK, rdb.Retry, rdb.Dead, rdb.Fail, rdb.Cancelled, rdb.Handback, rdb.Snooze}
	for step := range steps {
		var op string
		switch x := r.IntN(100); {
		case x < 25:
			op = "enqueue"
			id := "t" + strconv.Itoa(step)
			nt := rdb.NewTask{ID: id, Payload: []byte(`1`), Retention: time.Hour, MaxRetries: r.IntN(3)}
			if r.IntN(2) == 0 {
				nt.Key = "k" + strconv.Itoa(r.IntN(3))
			}
			f.enqueue(nt)
			op += " " + id + " " + nt.Key
			ids = append(ids, id)
		case x < 50:
			op = "fetch"
			c := "c" + strconv.Itoa(r.IntN(3))
			for _, g := range f.fetch(c, 1+r.IntN(3)) {
				runs = append(runs, run{c, g})
				op += fmt.Sprintf(" %s/%s/%q", g.ID, g.Entry, g.Key)
			}
		case x < 75 && len(runs) > 0:
			op = "finish"
			i := r.IntN(len(runs))
			ru := runs[i]
			runs = append(runs[:i], runs[i+1:]...)
			o := rdb.Outcome{ID: ru.f.ID, Entry: ru.f.Entry, Level: ru.f.Level, Kind: kinds[r.IntN(len(kinds))], Data: []byte(`"x"`)}
			if err := rdb.FinishCmd(f.ctx, f.c, f.keys, ru.consumer, 1000, time.Hour, []rdb.Outcome{o}).Err(); err != nil {
				t.Fatal(err)
			}
			op += fmt.Sprintf(" %s %s by %s entry %s key %q", o.Kind, ru.f.ID, ru.consumer, ru.f.Entry, ru.f.Key)
			if err := f.checkTrimmed(); err != nil {
				t.Fatalf("step %d (%s): %v", step, op, err)
			}
		case x < 82:
			op = "reclaim"
			f.reclaimAll()
		case x < 90:
			op = "promote"
			// Retries were given no delay: they are due at once.
			if _, _, _, err := rdb.Promote(f.ctx, f.c, f.keys, 1000); err != nil {
				t.Fatal(err)
			}
		case x < 95 && len(ids) > 0:
			op = "cancel"
			if _, _, err := rdb.Cancel(f.ctx, f.c, f.keys, ids[r.IntN(len(ids))]); err != nil {
				t.Fatal(err)
			}
		case x == 96 && len(ids) > 0:
			id := ids[r.IntN(len(ids))]
			what := []string{rdb.EditNow, rdb.EditAt, rdb.EditAt, rdb.EditLevel, rdb.EditPayload}[r.IntN(5)]
			at := time.Now().Add(time.Duration(r.IntN(3)-1) * time.Hour)
			st, outcome, err := rdb.EditTask(f.ctx, f.c, f.keys, id, what, at, 0, []byte(`2`))
			if err != nil {
				t.Fatal(err)
			}
			op = fmt.Sprintf("edit %s %s at %s: %s %s", id, what, at.Format(time.TimeOnly), st, outcome)
		case x == 97:
			op = "drain"
			for cursor := ""; ; {
				n, next, err := rdb.Drain(f.ctx, f.c, f.keys, f.ks.TaskUpdatesPrefix("q"), f.ks.TaskLogsPrefix("q"), 1, 2, cursor)
				if err != nil {
					t.Fatal(err)
				}
				op += " " + strconv.Itoa(n)
				if next == "" {
					break
				}
				cursor = next
			}
		case x == 98:
			st := []string{"succeeded", "failed", "cancelled", "dead"}[r.IntN(4)]
			op = "clean " + st
			for offset := 0; offset >= 0; {
				n, next, err := rdb.Clean(f.ctx, f.c, f.keys, f.ks.TaskUpdatesPrefix("q"), f.ks.TaskLogsPrefix("q"), st, time.Now().Add(time.Hour), offset, 2)
				if err != nil {
					t.Fatal(err)
				}
				op += " " + strconv.Itoa(n)
				offset = next
			}
		case len(ids) > 0:
			op = "requeue"
			if _, err := rdb.Requeue(f.ctx, f.c, f.keys, ids[r.IntN(len(ids))]); err != nil {
				t.Fatal(err)
			}
		}
		t.Logf("step %d: %s", step, op)
		if err := check(); err != nil {
			t.Fatalf("step %d (%s): %v", step, op, err)
		}
	}
	return f
}

// check verifies the invariants of the queue's keys.
func (f *fixture) check() error {
	states := map[string]int64{}
	iter := f.c.Scan(f.ctx, 0, f.ks.TaskPrefix("q")+"*", 1000).Iterator()
	for iter.Next(f.ctx) {
		states[f.c.HGet(f.ctx, iter.Val(), "s").Val()]++
	}
	for st, n := range f.counts() {
		c, _ := strconv.ParseInt(n, 10, 64)
		if c != states[st] {
			return fmt.Errorf("count of %s is %d, scan %d (counts %v, scan %v)", st, c, states[st], f.counts(), states)
		}
	}
	// A key's tokens are its live entries: not delivered yet, or pending.
	// (An acknowledged entry stays in the stream until a trim passes it.)
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
	parked := map[string]bool{}
	for _, m := range f.c.ZRange(f.ctx, f.ks.TaskScheduled("q"), 0, -1).Val() {
		if k, ok := strings.CutPrefix(m, "~k:"); ok {
			parked[k] = true
		}
	}
	for i := range 3 {
		k := "k" + strconv.Itoa(i)
		head := f.c.LIndex(f.ctx, f.ks.TaskKeyPrefix("q")+k, 0).Val()
		st := ""
		if head != "" {
			st = f.c.HGet(f.ctx, f.ks.TaskPrefix("q")+head, "s").Val()
		}
		switch {
		case tokens[k] > 1:
			return fmt.Errorf("key %s has %d tokens (head %s %s)", k, tokens[k], head, st)
		case (st == "pending" || st == "active") && tokens[k] != 1 && !parked[k]:
			return fmt.Errorf("key %s: head %s is %s with %d tokens", k, head, st, tokens[k])
		case (st == "retrying" || st == "scheduled") && tokens[k] != 0:
			// scheduled at the head of its key: snoozed
			return fmt.Errorf("key %s: head %s is %s with %d tokens", k, head, st, tokens[k])
		}
	}
	return nil
}

// streamNodeEntries is the most entries a node of a stream holds
// (stream-node-max-entries, the servers' default).
const streamNodeEntries = 100

// idAfter reports whether entry ID a comes after b.
func idAfter(a, b string) bool {
	parse := func(id string) (uint64, uint64) {
		ms, seq, _ := strings.Cut(id, "-")
		m, _ := strconv.ParseUint(ms, 10, 64)
		q, _ := strconv.ParseUint(seq, 10, 64)
		return m, q
	}
	am, as := parse(a)
	bm, bs := parse(b)
	return am > bm || am == bm && as > bs
}

// checkTrimmed verifies that the ready stream holds no more entries before
// its oldest pending one than the stream node holding it may keep (fewer
// than streamNodeEntries: finish.lua trims by whole nodes), and none when
// none is pending but entries not delivered yet, as finish.lua leaves it.
func (f *fixture) checkTrimmed() error {
	stream := f.ks.TaskStream("q", 0)
	first := f.c.XRangeN(f.ctx, stream, "-", "+", 1).Val()
	if len(first) == 0 {
		return nil
	}
	if p := f.c.XPendingExt(f.ctx, &redis.XPendingExtArgs{Stream: stream, Group: rdb.TaskGroup, Start: "-", End: "+", Count: 1}).Val(); len(p) > 0 {
		if before := f.c.XRangeN(f.ctx, stream, "-", "("+p[0].ID, streamNodeEntries).Val(); len(before) >= streamNodeEntries {
			return fmt.Errorf("%d entries or more left before the oldest pending %s, from %s", len(before), p[0].ID, first[0].ID)
		}
		return nil
	}
	if last := f.lastDelivered(stream); !idAfter(first[0].ID, last) {
		return fmt.Errorf("entry %s left, none pending, %s delivered last", first[0].ID, last)
	}
	return nil
}

// lastDelivered returns the ID of the last entry of stream delivered to the
// workers' group ("0-0" for none).
func (f *fixture) lastDelivered(stream string) string {
	for _, g := range f.c.XInfoGroups(f.ctx, stream).Val() {
		if g.Name == rdb.TaskGroup {
			return g.LastDeliveredID
		}
	}
	return "0-0"
}
