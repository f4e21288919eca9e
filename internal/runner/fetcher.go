package runner

import (
	"context"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/leatdev/leat/internal/core"
	"github.com/leatdev/leat/internal/rdb"
	"github.com/redis/go-redis/v9"
)

// fetcher reads the partitions of one executor into their buffers. One
// goroutine (run) does all reads, a round at a time:
//
//   - a partition whose buffer is at most half full and that may have data
//     (recovering, or its last read was full or busy) is read at once: new
//     entries with the transaction of fetch_tx.go on a single server;
//     recovery, a wake-up's read and every read on Cluster with the fetch
//     script of fetch_script.go;
//   - when no partition may have data, one blocking XREAD over the idle
//     partitions waits for new entries, with their fenced read queued
//     behind it (fetch_idle.go).
//
// Only fenced reads take entries into the pending list, and only for the
// lock holder. A consumer that drains its buffer below the watermark, or a
// new partition, wakes the fetcher and interrupts its blocking read
// (fetch_unblock.go, which also covers a Redis user denied CLIENT UNBLOCK).
// On Cluster, the partitions of a failing node wait for it apart from the
// others (fetch_nodes.go).
type fetcher struct {
	e   *Executor
	log *slog.Logger

	mu       sync.Mutex
	parts    map[int]*fetchState
	blocking bool
	blockID  int64 // CLIENT ID of the blocking connection

	noUnblock  bool      // CLIENT UNBLOCK is denied (fetch_unblock.go)
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

// fetchState is what the fetcher knows of one partition it reads; its
// fields are guarded by fetcher.mu.
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
	fetchArgs                          *rdb.FetchArgs

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
// as its buffer has room: a partition that receives entries all the time
// returns, to a fetcher that keeps up, what came during the last round
// trip, and waiting on the blocking read would cost it a round trip and a
// scripted read each time. The idle path's reads, a few entries each, stay
// below it.
const busyRead = 16

// watermark is the free buffer space that makes a partition worth a read.
func (f *fetcher) watermark() int { return max(1, f.e.opts.Prefetch/2) }

// add starts fetching p: first the group's pending entries (recovery), then
// new ones.
func (f *fetcher) add(p *partition) {
	f.mu.Lock()
	f.parts[p.n] = &fetchState{
		p: p, cursor: "0-0", keyArg: p.key, lockArg: p.lockKey,
		fetchArgs: &rdb.FetchArgs{Lock: p.lockKey, Partition: p.key, Group: f.e.processor, Consumer: f.e.id},
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
	fetch  *rdb.RawFetch
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

func isNoGroup(err error) bool { return err != nil && strings.Contains(err.Error(), "NOGROUP") }

// put puts ds, from one read of read new or pending entries, in the
// partition's buffer; last is the ID of the last entry read, or the stream's
// last ID when none was.
func (f *fetcher) put(w fetchWork, res rdb.FetchResult, ds []core.Delivery, read int, last string) {
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
	// empty or full (what does not fit waits in the overflow), so a backlog
	// whose reads fill the buffer does not hold it back.
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

// markAll makes states due for a read in the next round.
func (f *fetcher) markAll(states []*fetchState) {
	f.mu.Lock()
	for _, s := range states {
		s.hasData = true
	}
	f.mu.Unlock()
}

// rawDelivery is the delivery of a new entry of partition p, of a stream
// whose entry codec is entryCodec, read raw (fields point into the reply;
// see rdb.EachRawEntry).
func rawDelivery(p int, entryCodec, id string, fields [][]byte) core.Delivery {
	if len(fields) == 0 {
		return core.Delivery{Entry: core.Entry{ID: id, Partition: p}, Deliveries: 1, Err: core.ErrTrimmed}
	}
	e, err := core.ParseFieldBytes(id, p, entryCodec, fields)
	return core.Delivery{Entry: e, Deliveries: 1, Err: err}
}

// lost drops a partition whose lock is no longer this executor's.
func (f *fetcher) lost(s *fetchState) {
	f.put(fetchWork{s: s}, rdb.FetchResult{Held: false}, nil, 0, "")
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
