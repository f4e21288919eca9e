package runner

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/internal/topology"
)

// The idle read: when no partition may have data, one blocking XREAD over
// the idle partitions (from the last ID each has seen) waits for new
// entries, up to ReadBlock. XREAD takes nothing into the pending list: in
// the same write goes the fenced read of the idle partitions
// (fetch_idle.lua), which Redis runs as soon as the blocking read returns,
// so the entries that woke the fetcher come back with the same round trip.
//
// When it is used: on the fetcher's own connection (single server,
// Sentinel), once no partition has a read due. Where the read behind
// cannot run, or the idle partitions are more than maxIdleRead, the
// partitions the blocking read saw entries on are read next with the fetch
// script; without a blocking connection, the idle partitions are polled.
//
// What it costs: one blocking read per ReadBlock while the stream is
// quiet, and a wake-up only the blocking read's round trip; the read behind looks at every idle
// partition, so its cost to Redis grows with their number.

// idleScratch is what waitIdle builds for each blocking read, kept for the
// next: the idle partitions' keys, the IDs to read after, their states, and
// the indexes of those the read saw entries in; the fenced read queued
// behind the blocking one: its partitions and its arguments.
type idleScratch struct {
	keys, last []any // strings, boxed once (fetchState.keyArg, lastArg)
	states     []*fetchState
	got        []int
	parts      []rdb.IdlePartition
	args       []any
}

// maxIdleRead bounds the idle partitions whose fenced read goes behind a
// blocking read; a fetcher idle on more reads those the blocking read saw
// entries in once it returned. The read behind looks at every idle
// partition (an MGET of their locks and an XREADGROUP over them all) where
// the read after the wake-up looks at the partitions with entries only, so
// the round trip it saves is worth its cost to Redis up to a few dozen
// partitions (see docs/benchmarks.md).
const maxIdleRead = 64

// waitIdle blocks until an idle partition gets new entries, a consumer or a
// new partition wakes the fetcher, or ReadBlock passes.
func (f *fetcher) waitIdle(ctx context.Context, b *blocker) {
	var id int64
	var idErr error
	if b.ok() {
		id, idErr = b.id(ctx) // a round trip only on a new connection
	}
	f.mu.Lock()
	keys, last, states := f.idleBuf.keys[:0], f.idleBuf.last[:0], f.idleBuf.states[:0]
	for _, s := range f.parts {
		if s.cursor == "" && !s.hasData && s.last != "" && cap(s.p.buf)-len(s.p.buf) >= f.watermark() {
			if s.lastArg == nil || s.lastArg.(string) != s.last {
				s.lastArg = s.last
			}
			keys = append(keys, s.keyArg)
			last = append(last, s.lastArg)
			states = append(states, s)
		}
	}
	f.idleBuf.keys, f.idleBuf.last, f.idleBuf.states = keys, last, states
	defer clear(states) // hold no partition after it is gone
	select {
	case <-f.wake: // something changed since collect: look again
		f.mu.Unlock()
		return
	default:
	}
	block := f.e.opts.ReadBlock
	poll := !b.ok()
	if f.noUnblock {
		block = min(block, maxUninterruptible)
		for _, s := range f.parts {
			if len(s.overflow) > 0 || cap(s.p.buf)-len(s.p.buf) < f.watermark() {
				poll = true // its consumer will wake the fetcher: do not block
				break
			}
		}
	}
	if len(keys) == 0 || poll {
		f.mu.Unlock()
		wait := f.e.opts.ReadBlock
		if len(keys) > 0 {
			wait = min(wait, 50*time.Millisecond) // no blocking connection: poll
		}
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-ctx.Done():
		case <-f.wake:
		case <-t.C:
			if len(keys) > 0 {
				f.markAll(states)
			}
		}
		return
	}
	f.blocking = true
	f.blockID = id
	// The fenced read of the idle partitions goes right behind the
	// blocking read (see idleRead), unless they are too many.
	parts := f.idleBuf.parts[:0]
	if len(states) <= maxIdleRead {
		for _, s := range states {
			if token := s.p.lock.Value(); s.tokenArg == nil || s.tokenArg.(string) != token {
				s.tokenArg = token
			}
			parts = append(parts, rdb.IdlePartition{Lock: s.lockArg, Stream: s.keyArg, Token: s.tokenArg})
		}
	}
	f.idleBuf.parts = parts
	defer clear(parts)
	count := min(maxWokeRead, f.watermark())
	f.mu.Unlock()
	got := f.idleBuf.got[:0]
	var fetch *rdb.RawFetch
	var then func(p rdb.Processor)
	if len(parts) > 0 {
		then = func(p rdb.Processor) {
			fetch, f.idleBuf.args = rdb.FetchIdle(ctx, p, f.groupArg, f.consumerArg, count, parts, f.idleBuf.args)
		}
	}
	err := idErr
	if err == nil {
		err = b.xread(ctx, keys, last, block, func(i int) { got = append(got, i) }, then)
	}
	f.idleBuf.got = got
	f.mu.Lock()
	f.blocking = false
	if err != nil && fetch != nil {
		// The fenced read may have run with its reply lost: what it took
		// is pending with this executor, and recovery hands it out.
		f.recheckStates(states)
	}
	f.mu.Unlock()
	if err == nil && fetch != nil {
		if f.idleRead(ctx, fetch, states, count, got) {
			return
		}
		// The read behind did not run: the scripts were flushed, or a
		// partition's stream is gone with its group (deleted, or evicted),
		// which fails its XREADGROUP over every idle partition. Each idle
		// partition is read on its own once, which creates a missing
		// stream's group again (see read), so the next wake-ups do not fail.
		f.markAll(states)
	}
	f.mu.Lock()
	for _, i := range got {
		states[i].hasData, states[i].woke = true, true
	}
	f.mu.Unlock()
	if err != nil && ctx.Err() == nil {
		// Read the idle partitions rather than trust a wait that failed.
		f.markAll(states)
		if topology.Unsupported(err) {
			f.log.Info("server cannot interrupt blocking reads (CLIENT ID/UNBLOCK); polling idle partitions instead", "error", err)
			b.disable()
			return
		}
		if topology.Denied(err) { // CLIENT ID
			f.denied("CLIENT ID", err)
			b.disable()
			return
		}
		f.log.Debug("blocking read failed", "error", err)
		b.reset()
		sleepCtx(ctx, 50*time.Millisecond)
	}
}

// idleRead hands over what the fenced read queued behind a blocking read
// (fetch_idle.lua) read of the idle partitions states, so their entries
// reach the consumers with the blocking read's own round trip. A partition
// whose lock is no longer this executor's is dropped, as by any fenced
// read; one with new entries the read did not return (read full, or only
// the blocking read saw them) is read again at once. It returns false when
// the read did not run (the scripts were flushed, a stream or group is
// gone): waitIdle then has each idle partition read on its own.
func (f *fetcher) idleRead(ctx context.Context, fetch *rdb.RawFetch, states []*fetchState, count int, got []int) bool {
	type span struct{ i, from, to int }
	var spans []span
	var lost []int
	ec := f.e.stream.EntryCodec()
	all := f.parsed[:0]
	defer func() { f.keepParsed(all) }()
	ran, err := rdb.ParseRawFetchIdle(fetch, func(i int) { lost = append(lost, i) }, func(i int, id string, fields [][]byte) error {
		if i < 0 || i >= len(states) {
			return fmt.Errorf("fetch_idle: partition %d of %d", i+1, len(states))
		}
		if n := len(spans); n == 0 || spans[n-1].i != i {
			spans = append(spans, span{i: i, from: len(all)})
		}
		all = append(all, rawDelivery(states[i].p.n, ec, id, fields))
		spans[len(spans)-1].to = len(all)
		return nil
	})
	if err != nil {
		if rdb.IsNoScript(err) {
			if lerr := rdb.Load(ctx, f.rounds); lerr != nil {
				f.log.Debug("loading scripts failed", "error", lerr)
			}
		} else {
			f.log.Debug("idle fenced read failed", "error", err)
		}
		if !ran {
			return false
		}
		// It ran and its reply could not be read: what it took is pending
		// with this executor, and recovery hands it out.
		f.mu.Lock()
		f.recheckStates(states)
		f.mu.Unlock()
		return true
	}
	if !ran {
		return false
	}
	for _, i := range lost {
		if i >= 0 && i < len(states) {
			f.lost(states[i])
		}
	}
	read := make(map[int]bool, len(spans)+len(lost))
	for _, i := range lost {
		read[i] = true
	}
	for _, sp := range spans {
		read[sp.i] = true
		ds := all[sp.from:sp.to:sp.to]
		f.put(fetchWork{s: states[sp.i], count: count}, rdb.FetchResult{Held: true}, ds, len(ds), ds[len(ds)-1].ID)
	}
	f.mu.Lock()
	for _, i := range got {
		if !read[i] {
			states[i].hasData = true
		}
	}
	f.mu.Unlock()
	if len(spans) > 0 {
		runtime.Gosched() // as after a wake-up's read (readScripted)
	}
	return true
}

// recheckStates marks states, those still fetched, for recovery (see
// fetchState.recheck): the read behind a blocking read of them may have run
// with its reply lost. f.mu is held.
func (f *fetcher) recheckStates(states []*fetchState) {
	for _, s := range states {
		if f.parts[s.p.n] == s {
			s.recheck()
		}
	}
}
