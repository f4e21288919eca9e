package runner

import (
	"context"
	"errors"

	"github.com/leatdev/leat/internal/rdb"
	"github.com/redis/go-redis/v9"
)

// The transaction read: fenced reads of new entries without a script, as an
// optimistic transaction on the fetcher's own connection:
//
//	WATCH lock...; MGET lock...          which locks are still ours?
//	MULTI; XREADGROUP ... >; ...; EXEC   read the partitions whose lock is ours
//
// If any watched lock changed (taken over, expired, or refreshed by us)
// between the two, EXEC does nothing and the read is tried again, so entries
// only ever enter the pending list of the executor that holds the lock, as
// with the script.
//
// When it is used: for new entries of partitions with a backlog, on a
// single server or Sentinel. Keys of different partitions live in different
// Cluster slots, so Cluster clients use the script instead.
//
// What it costs: two round trips where the script takes one, but a plain
// XREADGROUP reply, which costs Redis much less per entry than a script's
// (converted to Lua and back).

// readTx reads new entries of every partition in work (none recovering).
func (f *fetcher) readTx(ctx context.Context, work []fetchWork) error {
	if len(work) == 0 {
		return nil
	}
	e := f.e
	conn := f.tx.get()
	locks := make([]string, len(work))
	for i, w := range work {
		locks[i] = w.s.p.lockKey
	}
	owners, err := rdb.WatchLocks(ctx, conn, locks)
	if err != nil {
		f.tx.reset()
		return err
	}
	held := work[:0:0]
	for i, v := range owners {
		w := work[i]
		if tok, _ := v.(string); tok != w.s.p.lock.Value() {
			f.lost(w.s)
			continue
		}
		held = append(held, w)
	}
	if len(held) == 0 {
		err := rdb.Unwatch(ctx, conn)
		if err != nil {
			f.tx.reset()
		}
		return err
	}
	reads := make([]rdb.OnceCmd, len(held))
	tails := make([]*redis.XMessageSliceCmd, len(held))
	err = rdb.ExecWatched(ctx, conn, func(p redis.Pipeliner) {
		for i, w := range held {
			// Raw: parsed in place (rdb.EachRawEntry), without a
			// tree of interfaces, from one slice that the entries' IDs
			// and fields then point into.
			reads[i], tails[i] = rdb.QueueReadNew(ctx, p, e.processor, e.id, w.s.p.key, w.count, w.s.last == "")
		}
	})
	switch {
	case errors.Is(err, redis.TxFailedErr):
		return nil // a lock changed meanwhile: look again
	case rdb.IsExecAbort(err):
		// Redis refused one of the reads as it was queued (at maxmemory,
		// XREADGROUP is refused with OOM) and ran none: go-redis reports
		// only the abort, so the fetch script reads the same partitions,
		// and its error names the refusal. EXEC, aborted or not, unwatched
		// the locks.
		_, err := f.readScripted(ctx, held)
		return err
	case err != nil && !errors.Is(err, redis.Nil) && !isNoGroup(err):
		f.tx.reset()
		f.recheck(held) // EXEC may have run
		return err
	}
	ec := f.e.stream.EntryCodec()
	for i, w := range held {
		raw, err := reads[i].Result()
		ds := f.scratch[:0]
		if err == nil {
			err = rdb.EachRawEntry(raw, func(id string, fields [][]byte) error {
				ds = append(ds, rawDelivery(w.s.p.n, ec, id, fields))
				return nil
			})
		}
		switch {
		case isNoGroup(err):
			w.s.noGroup = true
			continue
		case err != nil && !errors.Is(err, redis.Nil):
			f.recheck(held[i:]) // read in Redis, not here
			return err
		}
		last := ""
		if n := len(ds); n > 0 {
			last = ds[n-1].ID
		} else {
			last = "0-0"
			if tails[i] != nil {
				if tail := tails[i].Val(); len(tail) > 0 {
					last = tail[0].ID
				}
			} else {
				last = w.s.last
			}
		}
		f.put(w, rdb.FetchResult{Held: true}, ds, len(ds), last)
		// put copied ds into the buffer (or the overflow): its memory
		// serves the next read, cleared so it keeps no reply alive.
		clear(ds)
		f.scratch = ds[:0]
	}
	return nil
}
