package runner

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leatdev/leat/executor"
	"github.com/leatdev/leat/internal/core"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// On the idle path, entries the blocking read saw arrive are read with the
// fenced fetch script, one round trip, not with the two of the optimistic
// transaction (WATCH, MGET, then MULTI ... EXEC).
func TestWakeUpReadIsOneScript(t *testing.T) {
	r, s := privateRig(t, 4)
	e, got := idleExecutor(t, r)
	cc := countCommands(t, s)
	const sends = 20
	for i := range sends {
		r.send(i%4, 1)
		redistest.Eventually(t, 10*time.Second, "the entry processed", func() bool { return got.Load() == int64(i+1) })
		redistest.Eventually(t, 10*time.Second, "the fetcher waiting again", func() bool { return e.fetch.idle() == 4 })
	}
	// The blocking read that saw the first entry was sent before counting
	// began; the one after the last entry may still be on its way.
	redistest.Eventually(t, 10*time.Second, "the blocking read after the last entry", func() bool {
		cc.mu.Lock()
		defer cc.mu.Unlock()
		return cc.byCmd["xread"] >= sends
	})
	cc.stop()
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if n := cc.byCmd["watch"] + cc.byCmd["multi"] + cc.byCmd["mget"]; n != 0 {
		t.Errorf("wake-up reads used the transaction: %v", cc.byCmd)
	}
	if n := cc.byCmd["xread"]; n < sends {
		t.Errorf("%d blocking reads for %d entries sent one at a time: %v", n, sends, cc.byCmd)
	}
	if n := cc.byCmd["evalsha"] + cc.byCmd["eval"]; n < sends {
		t.Errorf("%d scripts for %d wake-ups: %v", n, sends, cc.byCmd)
	}
	t.Logf("commands for %d entries sent to idle partitions one at a time: %v", sends, cc.byCmd)
}

// An idle fetcher's blocking read waits at most half the client's
// ReadTimeout, whatever ReadBlock says: its socket deadline is the client's
// (a read blocked past it would fail and open a new connection each time),
// and an entry sent after a while idle is still read at once.
func TestBlockingReadWithinReadTimeout(t *testing.T) {
	s := redistest.Start(t)
	opt := *s.Client(t).Options()
	opt.ReadTimeout = 300 * time.Millisecond
	opt.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	c := redis.NewClient(&opt)
	t.Cleanup(func() { _ = c.Close() })
	r := rigOn(t, c, "idle", 2, 1000)
	_, got := idleExecutor(t, r)
	cc := countCommands(t, s)
	reads := func() int {
		cc.mu.Lock()
		defer cc.mu.Unlock()
		return cc.byCmd["xread"]
	}
	// 150ms blocks: four of them in well under ReadBlock.
	redistest.Eventually(t, 4*time.Second, "blocking reads ended by their block", func() bool { return reads() >= 4 })
	r.send(1, 1)
	redistest.Eventually(t, 10*time.Second, "the entry processed", func() bool { return got.Load() == 1 })
	cc.stop()
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if n := cc.byCmd["client"]; n != 0 { // CLIENT ID, asked on a new connection
		t.Errorf("blocking reads failed and the fetcher connected again: %v", cc.byCmd)
	}
}

// counting is a handler that acknowledges what it reads and counts it in
// got.
func counting(got *atomic.Int64) Handler {
	return func(ctx context.Context, feed core.Feed) error {
		for ds := feed.Next(1, 0); ds != nil; ds = feed.Next(1, 0) {
			got.Add(int64(len(ds)))
			feed.Done(ds)
		}
		return nil
	}
}

// A wake-up's read takes at most maxWokeRead entries with the fetch script
// (whose replies pass through Lua, dearer for Redis than the transaction's):
// when the blocking read finds a partition with more, the rest is read by
// the transaction, since the script's read came back full.
func TestWakeUpReadLeavesBacklogToTransaction(t *testing.T) {
	r, s := privateRig(t, 1)
	var got atomic.Int64
	e := r.executor("p", executor.Options{LockExpiry: 30 * time.Second, ReadBlock: 5 * time.Second}, counting(&got))
	if e.opts.Prefetch <= maxWokeRead {
		t.Fatalf("prefetch %d: a buffer larger than a wake-up's read is needed", e.opts.Prefetch)
	}
	r.run(e)
	owns(t, e, 0)
	redistest.Eventually(t, 10*time.Second, "the fetcher waiting", func() bool { return e.fetch.idle() == 1 })
	var mu sync.Mutex
	var scripted []string // the COUNT of each read of new entries by the fetch script
	tx := 0               // reads of new entries outside scripts: the transaction's
	stop := redistest.Monitor(t, s.Addr, func(line string) {
		line = strings.TrimSpace(line)
		if !strings.Contains(line, `"XREADGROUP"`) || !strings.HasSuffix(line, `">"`) {
			return
		}
		_, count, _ := strings.Cut(line, `"COUNT" "`)
		count, _, _ = strings.Cut(count, `"`)
		mu.Lock()
		defer mu.Unlock()
		if strings.Contains(line, " lua]") {
			scripted = append(scripted, count)
		} else {
			tx++
		}
	})
	const n = 3 * maxWokeRead
	r.send(0, n) // one pipeline: the blocking read wakes on the first
	redistest.Eventually(t, 10*time.Second, "every entry processed", func() bool { return got.Load() == n })
	redistest.Eventually(t, 10*time.Second, "the fetcher waiting again", func() bool { return e.fetch.idle() == 1 })
	stop()
	mu.Lock()
	defer mu.Unlock()
	if len(scripted) == 0 {
		t.Fatal("no wake-up read")
	}
	for _, c := range scripted {
		if c != strconv.Itoa(maxWokeRead) {
			t.Errorf("a wake-up's read asked for %s entries, want %d", c, maxWokeRead)
		}
	}
	t.Logf("fetch script reads %v, transaction reads %d", scripted, tx)
}

// An idle fetcher's fenced read rides on its blocking read: it goes in the
// same write, right behind it, and Redis runs it (fetch_idle.lua, whose
// first command is an MGET) as soon as the blocking read returns, so the
// entries that woke the fetcher come back with the blocking read's own
// round trip. No read of new entries goes through the per-partition fetch
// script or the transaction after a wake-up.
func TestIdleReadRidesOnBlockingRead(t *testing.T) {
	r, s := privateRig(t, 4)
	e, got := idleExecutor(t, r)
	var mu sync.Mutex
	idleReads, otherReads, idleScript := 0, 0, false
	stop := redistest.Monitor(t, s.Addr, func(line string) {
		mu.Lock()
		defer mu.Unlock()
		inScript := strings.Contains(line, " lua]")
		switch {
		case !inScript:
			idleScript = false // a new command from a client
		case strings.Contains(line, `"MGET"`):
			idleScript = true // fetch_idle.lua's first command
		case strings.Contains(line, `"XREADGROUP"`) && strings.Contains(line, `">"`) && idleScript:
			idleReads++
		}
		if strings.Contains(line, `"XREADGROUP"`) && strings.Contains(line, `">"`) && !idleScript {
			otherReads++ // fetch.lua's or the transaction's
		}
	})
	const sends = 20
	for i := range sends {
		r.send(i%4, 1)
		redistest.Eventually(t, 10*time.Second, "the entry processed", func() bool { return got.Load() == int64(i+1) })
		redistest.Eventually(t, 10*time.Second, "the fetcher waiting again", func() bool { return e.fetch.idle() == 4 })
	}
	stop()
	mu.Lock()
	defer mu.Unlock()
	if idleReads != sends || otherReads != 0 {
		t.Fatalf("%d entries sent one at a time: %d reads behind the blocking read, %d others", sends, idleReads, otherReads)
	}
}

// A fetcher idle on more than maxIdleRead partitions sends its blocking
// read alone, and reads the partitions it saw entries in right after it
// with the fenced fetch script: a read behind it would look at every idle
// partition.
func TestWideIdleReadAfterWakeUp(t *testing.T) {
	r, s := privateRig(t, maxIdleRead+1)
	e, got := idleExecutor(t, r)
	var mu sync.Mutex
	scripted, fetched := 0, 0
	stop := redistest.Monitor(t, s.Addr, func(line string) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case strings.Contains(line, " lua]") && strings.Contains(line, `"MGET"`):
			scripted++ // fetch_idle.lua's first command
		case strings.Contains(line, " lua]") && strings.Contains(line, `"XREADGROUP"`) && strings.Contains(line, `">"`):
			fetched++ // fetch.lua's read of new entries
		}
	})
	const sends = 5
	for i := range sends {
		r.send(i*7%(maxIdleRead+1), 1)
		redistest.Eventually(t, 10*time.Second, "the entry processed", func() bool { return got.Load() == int64(i+1) })
		redistest.Eventually(t, 10*time.Second, "the fetcher waiting again", func() bool { return e.fetch.idle() == maxIdleRead+1 })
	}
	stop()
	mu.Lock()
	defer mu.Unlock()
	if scripted != 0 || fetched != sends {
		t.Fatalf("%d entries sent one at a time to %d partitions: %d reads behind the blocking read, %d fenced reads after it", sends, maxIdleRead+1, scripted, fetched)
	}
}

// The read behind the blocking read is fenced: a partition whose lock was
// taken by another acquisition while the fetcher waited has none of its
// entries taken into this executor's pending list, and is dropped at once
// (before the lock's next refresh would find it gone).
func TestIdleReadFenced(t *testing.T) {
	r, _ := privateRig(t, 2)
	e, got := idleExecutor(t, r)
	takeLock(t, r, 1)
	r.send(1, 3)
	redistest.Eventually(t, 5*time.Second, "partition 1 dropped", func() bool { return fmt.Sprint(e.Owned()) == "[0]" })
	pending, err := r.client.XPendingExt(context.Background(), &redis.XPendingExtArgs{Stream: r.keys.Partition("s", 1), Group: "p", Start: "-", End: "+", Count: 10}).Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(pending) != 0 || got.Load() != 0 {
		t.Fatalf("entries of a partition whose lock is another's: %d processed, pending %+v", got.Load(), pending)
	}
	// the partition it still holds reads on
	r.send(0, 1)
	redistest.Eventually(t, 10*time.Second, "partition 0's entry processed", func() bool { return got.Load() == 1 })
}

// The read behind the blocking read checks the lock of every idle
// partition, not only of those with new entries: one whose lock another
// acquisition took is dropped at the first wake-up, here for another
// partition's entry, before the lock's next refresh would find it gone.
func TestIdleReadDropsEveryLostPartition(t *testing.T) {
	r, _ := privateRig(t, 2)
	e, got := idleExecutor(t, r)
	takeLock(t, r, 1)
	r.send(0, 1)
	redistest.Eventually(t, 5*time.Second, "partition 0's entry processed", func() bool { return got.Load() == 1 })
	redistest.Eventually(t, 5*time.Second, "partition 1 dropped", func() bool { return fmt.Sprint(e.Owned()) == "[0]" })
}

// The read behind the blocking read reads every idle partition in one
// XREADGROUP, which fails as a whole when one partition's stream is gone
// (deleted, or evicted under maxmemory) with its group: the fetcher then
// reads each idle partition on its own once, and that read of the missing
// one creates its stream and group again, so that the next wake-ups ride
// on the blocking read again instead of failing each time.
func TestIdleReadRecreatesMissingStream(t *testing.T) {
	r, _ := privateRig(t, 2)
	_, got := idleExecutor(t, r)
	ctx := context.Background()
	gone := r.keys.Partition("s", 1)
	if err := r.client.Del(ctx, gone).Err(); err != nil {
		t.Fatal(err)
	}
	r.send(0, 1)
	redistest.Eventually(t, 10*time.Second, "partition 0's entry processed", func() bool { return got.Load() == 1 })
	redistest.Eventually(t, 5*time.Second, "partition 1's stream and group created again", func() bool {
		groups, err := r.client.XInfoGroups(ctx, gone).Result()
		return err == nil && len(groups) == 1 && groups[0].Name == "p"
	})
	r.send(1, 1)
	redistest.Eventually(t, 10*time.Second, "partition 1's entry processed", func() bool { return got.Load() == 2 })
}

// takeLock makes partition's lock of processor "p" another acquisition's,
// as a successor's after this executor's lock expired.
func takeLock(t *testing.T, r *rig, partition int) {
	t.Helper()
	lock := r.keys.Lock("s", "p", partition)
	if err := r.client.SetArgs(context.Background(), lock, "another-acquisition", redis.SetArgs{KeepTTL: true}).Err(); err != nil {
		t.Fatal(err)
	}
}

// When the read behind the blocking read cannot run (the server lost its
// scripts), the partitions the blocking read saw entries in are read on
// their own, as before, and the scripts are loaded again.
func TestIdleReadAfterScriptFlush(t *testing.T) {
	r, _ := privateRig(t, 2)
	_, got := idleExecutor(t, r)
	if err := r.client.ScriptFlush(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		r.send(i%2, 1)
		redistest.Eventually(t, 10*time.Second, "the entry processed", func() bool { return got.Load() == int64(i+1) })
	}
}

// idleExecutor runs an executor of processor "p" over every partition of r
// (lock expiry 30s, reads blocking 5s) that counts what it processes, and
// waits until it owns them all and its fetcher waits on each.
func idleExecutor(t *testing.T, r *rig) (*Executor, *atomic.Int64) {
	t.Helper()
	got := new(atomic.Int64)
	e := r.executor("p", executor.Options{LockExpiry: 30 * time.Second, ReadBlock: 5 * time.Second}, counting(got))
	r.run(e)
	n := r.st.Definition().Partitions
	ps := make([]int, n)
	for i := range ps {
		ps[i] = i
	}
	owns(t, e, ps...)
	redistest.Eventually(t, 10*time.Second, "the fetcher waiting on every partition", func() bool { return e.fetch.idle() == n })
	return e, got
}
