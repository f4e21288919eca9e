package executor

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/leatdev/leat/internal/core"
	"github.com/leatdev/leat/internal/scripts"
	"github.com/leatdev/leat/internal/topology"
	"github.com/redis/go-redis/v9"
)

// fetcher reads the partitions of one executor into their buffers. One
// goroutine does all reads:
//
//   - a partition whose buffer is at most half full and that may have data
//     (recovering, or its last read was full) is read with the fenced fetch
//     script; the reads of all such partitions share one pipelined round trip;
//   - when no partition may have data, one blocking XREAD over the idle
//     partitions (from the last ID each has seen) waits for new entries, up
//     to ReadBlock. XREAD takes nothing into the pending list: only the
//     fenced read does, and only for the lock holder.
//   - behind the blocking XREAD, in the same write, goes the fenced read of
//     the idle partitions (fetch_idle.lua), which Redis runs as soon as the
//     blocking read returns: the entries that woke the fetcher come back
//     with the same round trip (idleRead). Where it cannot run, or the
//     idle partitions are more than maxIdleRead, the partitions the
//     blocking XREAD saw new entries on are read next with the fenced fetch
//     script, in one round trip (the transaction of fetch_tx.go takes two;
//     it serves partitions with a backlog, whose larger replies a script
//     would cost Redis more to return).
//
// A consumer that drains its buffer below the watermark, or a new partition,
// wakes the fetcher, interrupting the blocking XREAD with CLIENT UNBLOCK.
//
// A Redis user that may not run CLIENT UNBLOCK (the common ACL
// "+@all -@dangerous") would leave a full partition waiting for the blocking
// read over the idle ones to time out, each time its buffer drains. So when
// CLIENT UNBLOCK is denied (logged once), the fetcher blocks only while
// every buffer has room (no consumer will wake it), and for at most
// maxUninterruptible; while some consumer works through a fuller buffer, it
// waits for that consumer's wake-up instead and polls the idle partitions.
type fetcher struct {
	e   *Executor
	log *slog.Logger

	mu       sync.Mutex
	parts    map[int]*fetchState
	blocking bool
	blockID  int64 // CLIENT ID of the blocking connection

	noUnblock  bool      // CLIENT UNBLOCK is denied: see above
	deniedOnce sync.Once // the warning about it

	wake    chan struct{}
	unblock chan struct{}

	tx      *fetchConn      // the fetcher goroutine's own connection (connections.go)
	scratch []core.Delivery // the entries of one read in readTx, reused
	parsed  []core.Delivery // the entries of the reads in readScripted, reused
	every   []int           // the indexes of readScripted's work, reused
	idleBuf idleScratch     // waitIdle's, reused

	groupArg, consumerArg any // the processor's and executor's names, boxed once for FetchIdle

	rounds  redis.UniversalClient // the client of scripted reads (roundClient)
	probes  map[string]*probe     // Cluster: failing nodes' partitions, by node (fetch_nodes.go)
	probeWG sync.WaitGroup
}

// idleScratch is what waitIdle builds for each blocking read, kept for the
// next: the idle partitions' keys, the IDs to read after, their states, and
// the indexes of those the read saw entries in; the fenced read queued
// behind the blocking one: its partitions and its arguments.
type idleScratch struct {
	keys, last []any // strings, boxed once (fetchState.keyArg, lastArg)
	states     []*fetchState
	got        []int
	parts      []scripts.IdlePartition
	args       []any
}

type fetchState struct {
	p       *partition
	cursor  string // XAUTOCLAIM cursor while recovering; "" once reading new entries
	pushed  string // ID of the last entry read into the buffer (see recheck)
	hasData bool   // the last read was full, or busy (busyRead): read again without waiting
	woke    bool   // the blocking read saw new entries: read them with the script (one round trip)
	last    string // last ID seen, for the blocking XREAD
	noGroup bool   // the group is missing (stream deleted): create it again

	// the partition's key and last as arguments of the blocking XREAD, its
	// lock's key and token as arguments of the read behind it, and the
	// fenced reads' arguments, boxed once rather than at every read (set by
	// fetcher.add; lastArg follows last, tokenArg the lock's token)
	keyArg, lastArg, lockArg, tokenArg any
	fetchArgs                          *scripts.FetchArgs

	probing  bool // its node failed: a probe owns it until the node answers (fetch_nodes.go)
	failures int  // reads failed in a row, for the probe's backoff

	trimReported int64          // unread trimmed entries already reported (see trim.go)
	trimNotice   *core.Delivery // a report to deliver before the next entries

	overflow []core.Delivery // read but not yet in the buffer, which was full
}

// recheck makes the next read of s a recovery from just after the last
// entry read into its buffer: a read of new entries that failed may have
// run in Redis (its reply was lost), taking entries into this executor's
// pending list that no later read of new entries returns and no other
// executor claims while this one holds the partition. XAUTOCLAIM from there
// returns them, counting the lost delivery, before any newer entry; when the
// read had not run, it finds nothing and reading new entries resumes. The
// caller holds f.mu.
func (s *fetchState) recheck() {
	if s.cursor == "" {
		s.cursor = nextID(s.pushed)
	}
}

// nextID returns the smallest entry ID after id ("0-0" for none).
func nextID(id string) string {
	if id == "" {
		return "0-0"
	}
	ms, seq, ok := strings.Cut(id, "-")
	n, err := strconv.ParseUint(seq, 10, 64)
	if !ok || err != nil {
		return "0-0" // not an entry ID: recover from the start
	}
	if n == math.MaxUint64 {
		m, err := strconv.ParseUint(ms, 10, 64)
		if err != nil {
			return "0-0"
		}
		return strconv.FormatUint(m+1, 10) + "-0"
	}
	return ms + "-" + strconv.FormatUint(n+1, 10)
}

// recheck marks the partitions of reads of new entries that failed (see
// fetchState.recheck).
func (f *fetcher) recheck(work []fetchWork) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, w := range work {
		if w.cursor == "" && f.parts[w.s.p.n] == w.s {
			w.s.recheck()
		}
	}
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

// keepParsed empties all, the entries of a read parsed into f.parsed, and
// keeps its memory for the next read unless it grew beyond maxParsed.
func (f *fetcher) keepParsed(all []core.Delivery) {
	clear(all)
	if cap(all) <= maxParsed {
		f.parsed = all[:0]
	}
}

// push puts ds, after any earlier overflow, into the partition's buffer
// without blocking, and keeps what does not fit for later. The caller holds
// f.mu.
func (s *fetchState) push(ds []core.Delivery) {
	if len(s.overflow) > 0 {
		ds = append(s.overflow, ds...)
		s.overflow = nil
	}
	for i, d := range ds {
		select {
		case s.p.buf <- d:
		default:
			s.overflow = append([]core.Delivery(nil), ds[i:]...)
			return
		}
	}
}

func newFetcher(e *Executor) *fetcher {
	return &fetcher{
		e: e, log: e.log, parts: map[int]*fetchState{}, probes: map[string]*probe{},
		wake: make(chan struct{}, 1), unblock: make(chan struct{}, 1),
		groupArg: e.processor, consumerArg: e.id,
	}
}

// busyRead is how many entries a read of new entries must return, when
// not as many as it asked for, for the partition to be read again as soon
// as its buffer has room rather than once the blocking read sees new
// entries: a partition that receives entries all the time, read by a
// fetcher that keeps up, returns what came during the last round trip,
// rarely a full buffer, and waiting on the blocking read would cost it a
// round trip and the fetch script (whose large replies cost Redis more than
// the transaction's) each time. The reads of the idle path, a few entries
// each, stay below it.
const busyRead = 16

// maxIdleRead bounds the idle partitions whose fenced read goes behind a
// blocking read; a fetcher idle on more reads those the blocking read saw
// entries in once it returned. The read behind looks at every idle
// partition (three arguments each, which its Lua takes in, then an MGET of
// their locks and an XREADGROUP over them all) where the read after the
// wake-up looks at the partitions with entries only, so the round trip it
// saves is worth its cost to Redis up to a few dozen partitions: at 5,000
// events/s, one event per wake-up or a few, the median latency was better
// with it at 16 and 64 partitions and worse from 128 (0.92 and 0.93 ms
// against 1.31 and 1.62 at 128; 1.21 and 1.28 against 1.86 and 1.95 at
// 256).
const maxIdleRead = 64

// maxWokeRead bounds the read of a partition the blocking read saw new
// entries on, when the transaction serves the partitions with more: the
// fetch script returns its entries through Lua, which costs Redis more than
// the transaction per entry, so a wake-up that found a partition with many
// entries takes the first ones at once and the rest in the next read.
const maxWokeRead = 100

// watermark is the free buffer space that makes a partition worth a read.
func (f *fetcher) watermark() int { return max(1, f.e.opts.Prefetch/2) }

// add starts fetching p: first the group's pending entries (recovery), then
// new ones.
func (f *fetcher) add(p *partition) {
	f.mu.Lock()
	f.parts[p.n] = &fetchState{
		p: p, cursor: "0-0", keyArg: p.key, lockArg: p.lockKey,
		fetchArgs: &scripts.FetchArgs{Lock: p.lockKey, Partition: p.key, Group: f.e.processor, Consumer: f.e.id},
	}
	f.mu.Unlock()
	f.notify()
}

// remove stops fetching p. Once it returns, nothing more is put in p's
// buffer; what was read but did not fit is kept in p.leftover.
func (f *fetcher) remove(p *partition) {
	f.mu.Lock()
	if s, ok := f.parts[p.n]; ok && s.p == p {
		delete(f.parts, p.n)
		p.leftover = s.overflow
	}
	f.mu.Unlock()
}

// unhanded removes p from the fetcher and returns what was read for p and
// never taken by its consumer: its buffer and the overflow. The consumer
// calls it when it stops.
func (f *fetcher) unhanded(p *partition) []core.Delivery {
	f.remove(p)
	var out []core.Delivery
	for {
		select {
		case d := <-p.buf:
			out = append(out, d)
			continue
		default:
		}
		break
	}
	f.mu.Lock()
	out = append(out, p.leftover...)
	p.leftover = nil
	f.mu.Unlock()
	return out
}

// drained is called by a consumer that took events from p's buffer, whose
// length went from before to after: crossing the watermark wakes the fetcher.
func (f *fetcher) drained(p *partition, before, after int) {
	limit := cap(p.buf) - f.watermark()
	if before > limit && after <= limit {
		f.notify()
	}
}

func (f *fetcher) notify() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
	f.mu.Lock()
	blocking := f.blocking
	f.mu.Unlock()
	if blocking {
		select {
		case f.unblock <- struct{}{}:
		default:
		}
	}
}

type fetchWork struct {
	s      *fetchState
	count  int
	cursor string
	woke   bool
	fetch  *scripts.RawFetch
}

// run reads until ctx is done.
func (f *fetcher) run(ctx context.Context) {
	rounds, closeRounds := roundClient(f.e.client)
	defer closeRounds() // after the probes and the unblocker ended
	f.rounds = rounds
	var wg sync.WaitGroup
	defer wg.Wait()
	defer f.probeWG.Wait()
	bctx, stop := context.WithCancel(ctx)
	defer stop()
	f.tx = newFetchConn(f.e.own)
	defer f.tx.close()
	blocker := newBlocker(f.tx)
	f.probeUnblock(ctx, blocker)
	wg.Add(1)
	go func() { defer wg.Done(); f.unblocker(bctx, blocker) }()

	backoff := time.Duration(0)
	for ctx.Err() == nil {
		work := f.collect()
		if len(work) > 0 {
			if err := f.read(ctx, work); err != nil {
				if ctx.Err() != nil {
					return
				}
				backoff = min(max(2*backoff, 50*time.Millisecond), 2*time.Second)
				f.log.Warn("fetch failed", "error", err, "retry_in", backoff)
				sleepCtx(ctx, backoff)
				continue
			}
			backoff = 0
			continue
		}
		f.waitIdle(ctx, blocker)
	}
}

// collect lists the partitions worth reading now.
func (f *fetcher) collect() []fetchWork {
	f.mu.Lock()
	defer f.mu.Unlock()
	var work []fetchWork
	for _, s := range f.parts {
		if len(s.overflow) > 0 {
			s.push(nil) // no read until what was read is in the buffer
			continue
		}
		if s.probing {
			continue
		}
		free := cap(s.p.buf) - len(s.p.buf)
		if free < f.watermark() || (s.cursor == "" && !s.hasData) {
			continue
		}
		work = append(work, fetchWork{s: s, count: free, cursor: s.cursor, woke: s.woke})
	}
	return work
}

// read reads every partition in work. New entries are read with one
// transaction when the client has a single connection pool; recovery, the
// first read after the blocking read saw new entries (the idle path: one
// round trip instead of the transaction's two), and every read on other
// clients (Cluster), use the fenced fetch script.
func (f *fetcher) read(ctx context.Context, work []fetchWork) error {
	e := f.e
	for i := range work {
		if w := &work[i]; w.s.noGroup {
			if err := e.ensureGroup(ctx, w.s.p.key); err != nil {
				return err
			}
			w.s.noGroup = false
		}
	}
	if f.tx.ok() {
		var scripted []fetchWork
		var fresh []fetchWork
		for _, w := range work {
			switch {
			case w.cursor == "" && !w.woke:
				fresh = append(fresh, w)
			case w.cursor == "":
				// a wake-up's read: what is beyond it, the transaction reads
				// next (the read was full)
				w.count = min(w.count, maxWokeRead)
				scripted = append(scripted, w)
			default:
				scripted = append(scripted, w)
			}
		}
		err := f.readTx(ctx, fresh)
		if len(scripted) == 0 || err != nil {
			return err
		}
		work = scripted
	}
	failed, err := f.readScripted(ctx, work)
	if len(failed) > 0 && f.perNode() {
		f.isolate(ctx, failed, err) // the others go on at once
		return nil
	}
	return err
}

// maxParsed bounds the entries readScripted keeps room for between reads.
const maxParsed = 1024

// readScripted runs the fenced fetch script of every partition in work in
// one pipeline (a single partition's read goes without one). It returns the
// reads that failed, and the first error.
//
// A read that fails with NOSCRIPT did not run: after the scripts are loaded,
// those reads alone are sent again. The others of the round ran (on Cluster,
// only a master that lost its scripts answers NOSCRIPT), and their entries
// are now in this executor's pending list: sent again, they would read past
// them, and nothing would hand them out while it holds the partition.
func (f *fetcher) readScripted(ctx context.Context, work []fetchWork) ([]fetchWork, error) {
	// exec sends the reads of work[i] for each i in idx.
	exec := func(idx []int) error {
		var c interface {
			scripts.Processor
			Pipeline() redis.Pipeliner
		} = f.rounds
		if f.tx.ok() {
			c = f.tx.get() // never sends a command twice (connections.go)
		}
		queue := func(c scripts.Processor, w *fetchWork) {
			w.fetch = scripts.FetchRaw(ctx, c, w.s.fetchArgs, w.s.p.lock.Value(), w.count, w.cursor)
		}
		var err error
		if len(idx) == 1 { // a wake-up's read: no pipeline to build
			w := &work[idx[0]]
			queue(c, w)
			err = w.fetch.Err()
		} else {
			pipe := c.Pipeline()
			for _, i := range idx {
				queue(pipe, &work[i])
			}
			_, err = pipe.Exec(ctx)
		}
		var rerr redis.Error
		if err != nil && !errors.As(err, &rerr) {
			f.tx.reset() // broken off: the next read opens another connection
		}
		return err
	}
	// Replies are read raw (see scripts.EachRawEntry): an error reply such
	// as NOSCRIPT comes out of the parse, not Exec.
	type parsed struct {
		res scripts.FetchResult
		ds  []core.Delivery
		err error
	}
	results := make([]parsed, len(work))
	ec := f.e.stream.EntryCodec()
	// The reads' entries go one after the other in one reused slice, each
	// read's a full slice of it (deliver appends to it); put copies them.
	all := f.parsed[:0]
	defer func() { f.keepParsed(all) }()
	// parse parses the replies of work[i] for each i in idx, and returns
	// those that failed with NOSCRIPT.
	parse := func(idx []int) (noScript []int) {
		for _, i := range idx {
			w := work[i]
			from := len(all)
			res, err := scripts.ParseRawFetch(w.fetch, func(id string, fields [][]byte) error {
				all = append(all, rawDelivery(w.s.p.n, ec, id, fields))
				return nil
			})
			results[i] = parsed{res, nil, err}
			if scripts.IsNoScript(err) {
				noScript = append(noScript, i)
			}
			results[i].ds = all[from:len(all):len(all)]
		}
		return noScript
	}
	every := f.every[:0]
	for i := range work {
		every = append(every, i)
	}
	f.every = every
	err := exec(every)
	if again := parse(every); len(again) > 0 {
		// On Cluster, SCRIPT LOAD fails while a master is gone: the reads
		// of the nodes without the scripts then fail alone (see isolate).
		if lerr := scripts.Load(ctx, f.rounds); lerr == nil {
			err = exec(again)
			parse(again)
		} else if !f.perNode() {
			return nil, lerr
		}
	}
	var firstErr error
	var failed []fetchWork
	woken := false // entries of a wake-up's read were handed over
	for i, w := range work {
		res, ds, err := results[i].res, results[i].ds, results[i].err
		if err != nil {
			if isNoGroup(err) {
				w.s.noGroup = true
				continue
			}
			firstErr = cmp.Or(firstErr, err)
			failed = append(failed, w)
			continue
		}
		f.deliver(w, res, ds)
		woken = woken || (w.woke && len(ds) > 0)
	}
	if firstErr == nil && err != nil && !isNoGroup(err) {
		firstErr = err
	}
	f.recheck(failed)
	if woken {
		// The idle path's latency: the consumers just handed events run on
		// this P at once, rather than when an idle one is woken to take
		// them (a parked thread's wake-up, tens of µs on a VM); the fetcher
		// goes on when they block, or on another P.
		runtime.Gosched()
	}
	return failed, firstErr
}

func isNoGroup(err error) bool { return err != nil && strings.Contains(err.Error(), "NOGROUP") }

// deliver puts the entries of one scripted read (ds, in the order read) in
// the partition's buffer, with their delivery counts and the pending entries
// found deleted.
func (f *fetcher) deliver(w fetchWork, res scripts.FetchResult, ds []core.Delivery) {
	s := w.s
	read := len(ds)
	for i := range ds {
		if i < len(res.Counts) && res.Counts[i] > 0 {
			ds[i].Deliveries = res.Counts[i]
		}
	}
	for _, id := range res.Deleted {
		ds = append(ds, core.Delivery{Entry: core.Entry{ID: id, Partition: s.p.n}, Deliveries: 2, Err: core.ErrTrimmed})
	}
	if len(res.Deleted) > 0 {
		slices.SortFunc(ds, func(a, b core.Delivery) int { return core.CompareIDs(a.ID, b.ID) })
	}
	last := res.Last
	if read > 0 {
		last = ds[read-1].ID // before the deleted ones were sorted in: recovery does not use it
	}
	f.put(w, res, ds, read, last)
}

// put puts ds, from one read of read new or pending entries, in the
// partition's buffer; last is the ID of the last entry read, or the stream's
// last ID when none was.
func (f *fetcher) put(w fetchWork, res scripts.FetchResult, ds []core.Delivery, read int, last string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := w.s
	if cur, ok := f.parts[s.p.n]; !ok || cur != s {
		return // removed meanwhile: the entries stay pending for the next owner
	}
	if !res.Held {
		delete(f.parts, s.p.n)
		f.log.Warn("partition lock not held at fetch", "partition", s.p.n)
		s.p.cancel(errLockLost)
		return
	}
	// A trim report goes before the entries of the next read of new ones,
	// empty or full (what does not fit waits in the overflow): it once
	// waited for a read with room to spare, and a backlog whose last read
	// filled the buffer left it waiting for the next event.
	if s.trimNotice != nil && w.cursor == "" {
		ds = append([]core.Delivery{*s.trimNotice}, ds...)
		s.trimNotice = nil
	}
	s.push(ds)
	if n := len(ds); n > 0 && core.CompareIDs(ds[n-1].ID, s.pushed) > 0 {
		s.pushed = ds[n-1].ID
	}
	s.failures = 0
	s.woke = false
	if w.cursor != "" {
		s.cursor = res.Cursor
		if s.cursor == "0-0" || s.cursor == "" {
			s.cursor, s.hasData = "", true // recovery done: read new entries
		}
		return
	}
	s.hasData = read >= w.count || read >= busyRead
	if last != "" {
		s.last = last
	}
}

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
			parts = append(parts, scripts.IdlePartition{Lock: s.lockArg, Stream: s.keyArg, Token: s.tokenArg})
		}
	}
	f.idleBuf.parts = parts
	defer clear(parts)
	count := min(maxWokeRead, f.watermark())
	f.mu.Unlock()
	got := f.idleBuf.got[:0]
	var fetch *scripts.RawFetch
	var then func(p scripts.Processor)
	if len(parts) > 0 {
		then = func(p scripts.Processor) {
			fetch, f.idleBuf.args = scripts.FetchIdle(ctx, p, f.groupArg, f.consumerArg, count, parts, f.idleBuf.args)
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
// (fetch_idle.lua) read of the idle partitions states: the idle path's
// entries reach their consumers with the blocking read's own round trip,
// as a raw XREADGROUP's do, where a fenced read sent once the blocking read
// returned took one more. A partition whose lock is no longer this
// executor's is dropped, as by any fenced read; one with new entries the
// read did not return (read full, or only the blocking read saw them) is
// read again at once. It returns false when the read did not run (the
// scripts were flushed, a stream or group is gone): the partitions the
// blocking read saw entries in are then read on their own, as before.
func (f *fetcher) idleRead(ctx context.Context, fetch *scripts.RawFetch, states []*fetchState, count int, got []int) bool {
	type span struct{ i, from, to int }
	var spans []span
	var lost []int
	ec := f.e.stream.EntryCodec()
	all := f.parsed[:0]
	defer func() { f.keepParsed(all) }()
	ran, err := scripts.ParseRawFetchIdle(fetch, func(i int) { lost = append(lost, i) }, func(i int, id string, fields [][]byte) error {
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
		if scripts.IsNoScript(err) {
			if lerr := scripts.Load(ctx, f.rounds); lerr != nil {
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
		f.put(fetchWork{s: states[sp.i], count: count}, scripts.FetchResult{Held: true}, ds, len(ds), ds[len(ds)-1].ID)
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

// maxUninterruptible bounds a blocking read that CLIENT UNBLOCK cannot end,
// so that a new partition or a shutdown waits at most this long.
const maxUninterruptible = 250 * time.Millisecond

// probeUnblock finds out, before the first blocking read, whether the Redis
// user may run CLIENT UNBLOCK (of client 0, which does not exist: the
// answer is 0, or NOPERM).
func (f *fetcher) probeUnblock(ctx context.Context, b *blocker) {
	if !b.ok() {
		return
	}
	err := f.e.client.ClientUnblock(ctx, 0).Err()
	switch {
	case topology.Denied(err):
		f.denied("CLIENT UNBLOCK", err)
	case err != nil && topology.Unsupported(err):
		b.disable()
	}
}

// denied switches to reads that need no CLIENT UNBLOCK (or, for CLIENT ID,
// no blocking connection) and says so, once per fetcher.
func (f *fetcher) denied(command string, err error) {
	f.mu.Lock()
	f.noUnblock = true
	f.mu.Unlock()
	f.deniedOnce.Do(func() {
		f.log.Warn("the Redis user may not run a command that interrupts blocking reads: polling idle partitions while others have events",
			"command", command,
			"cost", "a read of each idle partition every 50ms instead of one blocking read",
			"grant", topology.Grant(command),
			"error", err)
	})
}

func (f *fetcher) markAll(states []*fetchState) {
	f.mu.Lock()
	for _, s := range states {
		s.hasData = true
	}
	f.mu.Unlock()
}

// unblocker interrupts the blocking XREAD when the fetcher is woken. A
// CLIENT UNBLOCK sent before the XREAD reached the server finds nothing to
// unblock, so it is repeated while the same wait is still on.
func (f *fetcher) unblocker(ctx context.Context, b *blocker) {
	for {
		select {
		case <-ctx.Done():
			// Shutdown: end a blocking read at once rather than after ReadBlock.
			uctx, cancel := context.WithTimeout(context.Background(), time.Second)
			f.interrupt(uctx)
			cancel()
			return
		case <-f.unblock:
		}
		f.interrupt(ctx)
	}
}

func (f *fetcher) interrupt(ctx context.Context) {
	{
		for range 50 {
			f.mu.Lock()
			blocking, id := f.blocking, f.blockID
			f.mu.Unlock()
			if !blocking || id == 0 {
				break
			}
			n, err := f.e.client.ClientUnblock(ctx, id).Result()
			if topology.Denied(err) {
				f.denied("CLIENT UNBLOCK", err)
			}
			if err != nil || n == 1 {
				break
			}
			sleepCtx(ctx, 2*time.Millisecond)
		}
	}
}

// sleepCtx waits for d or until ctx is done.
func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
