package executor

import (
	"context"
	"errors"
	"strings"

	"github.com/leatdev/leat/internal/scripts"
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

// isExecAbort reports whether err is Redis's EXECABORT reply.
func isExecAbort(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "EXECABORT")
}

// readTx reads new entries of every partition in work (none recovering).
func (f *fetcher) readTx(ctx context.Context, work []fetchWork) error {
	if len(work) == 0 {
		return nil
	}
	e := f.e
	conn := f.tx.get()
	locks := make([]string, len(work))
	watch := make([]any, 0, len(work)+1)
	watch = append(watch, "WATCH")
	for i, w := range work {
		locks[i] = w.s.p.lockKey
		watch = append(watch, w.s.p.lockKey)
	}
	var owners *redis.SliceCmd
	_, err := conn.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Do(ctx, watch...)
		owners = p.MGet(ctx, locks...)
		return nil
	})
	if err != nil {
		f.tx.reset()
		return err
	}
	held := work[:0:0]
	for i, v := range owners.Val() {
		w := work[i]
		if tok, _ := v.(string); tok != w.s.p.lock.Value() {
			f.lost(w.s)
			continue
		}
		held = append(held, w)
	}
	if len(held) == 0 {
		err := conn.Do(ctx, "UNWATCH").Err()
		if err != nil {
			f.tx.reset()
		}
		return err
	}
	reads := make([]scripts.OnceCmd, len(held))
	tails := make([]*redis.XMessageSliceCmd, len(held))
	_, err = conn.TxPipelined(ctx, func(p redis.Pipeliner) error {
		for i, w := range held {
			// Raw: parsed in place (scripts.EachRawEntry), without a
			// tree of interfaces, from one slice that the entries' IDs
			// and fields then point into.
			reads[i] = scripts.NewOnceCmd(ctx, "XREADGROUP", "GROUP", e.processor, e.id, "COUNT", w.count, "STREAMS", w.s.p.key, ">")
			_ = p.Process(ctx, reads[i])
			if w.s.last == "" {
				tails[i] = p.XRevRangeN(ctx, w.s.p.key, "+", "-", 1)
			}
		}
		return nil
	})
	switch {
	case errors.Is(err, redis.TxFailedErr):
		return nil // a lock changed meanwhile: look again
	case isExecAbort(err):
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
			err = scripts.EachRawEntry(raw, func(id string, fields [][]byte) error {
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
		f.put(w, scripts.FetchResult{Held: true}, ds, len(ds), last)
		// put copied ds into the buffer (or the overflow): its memory
		// serves the next read, cleared so it keeps no reply alive.
		clear(ds)
		f.scratch = ds[:0]
	}
	return nil
}
