package middleware

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/leatdev/leat/internal/rdb"
	"github.com/redis/go-redis/v9"
)

// DedupOptions configure Dedup.
type DedupOptions struct {
	// Header names the entry header holding the idempotency key. Used when
	// Key is nil; default "idempotency-key".
	Header string
	// Key returns the idempotency key of an entry; "" means the entry is
	// never deduplicated.
	Key func(e *Entry) string
	// TTL is how long an idempotency key is remembered. Default 24h.
	TTL time.Duration
}

// keyStager is a Fence that stages key writes with its acknowledgements
// (a partition's: core.Feed).
type keyStager interface {
	StageKey(key string, value []byte, ttl time.Duration)
	StagedKey(key string) bool
}

// ErrDedupConfig is returned by the handlers of a Dedup given a message
// without Redis access (no client or no partition fence).
var ErrDedupConfig = errors.New("middleware: dedup needs a message with a Redis client and a partition fence")

// Dedup returns a middleware skipping an event whose idempotency key was
// already processed by the processor within TTL: the event is acknowledged
// without reaching the loop body. Keys are recorded in Redis once the
// handling succeeded, so they hold across workers and restarts, with the
// partition's fencing token: a worker that lost the partition (paused past
// its lock expiry) cannot mark an event done.
//
// Keys are kept in the partition's hash slot: an idempotency key is
// recognised within a partition, which holds for duplicates of a record
// sent with the same partition key. In a batch, entries already processed
// are left out of what the loop body sees.
//
// In a processor (whose messages' Fence is the partition's), a record is
// written in the same step as the entries' acknowledgement and the
// processor's table writes (stream.DeclareTable), under the lock check of
// that step: an event is recorded if and only if it was acknowledged, so
// an event whose worker crashed or lost the partition before is processed
// again (at-least-once), and a table never misses the writes of an event
// recorded as done. Records not yet applied count as seen for the events
// after them. With a Fence that does not stage writes, the record is a
// fenced write of its own after the handling, which fails with
// stream.ErrNotOwner when the partition was lost.
func Dedup(o DedupOptions) Middleware {
	if o.Header == "" {
		o.Header = "idempotency-key"
	}
	if o.TTL <= 0 {
		o.TTL = 24 * time.Hour
	}
	if o.Key == nil {
		o.Key = func(e *Entry) string { return e.Headers[o.Header] }
	}
	return func(next Handler) Handler {
		return func(ctx context.Context, m *Message) error {
			if m.Client == nil || m.Fence == nil {
				return ErrDedupConfig
			}
			names := make([]string, len(m.Entries))
			var check []string
			for i := range m.Entries {
				if id := o.Key(&m.Entries[i]); id != "" {
					names[i] = m.Fence.LocalKey(rdb.Dedup(m.Processor, id))
					check = append(check, names[i])
				}
			}
			if len(check) == 0 {
				return next(ctx, m)
			}
			seen, err := rdb.DedupDone(ctx, m.Client, check...)
			if err != nil {
				return fmt.Errorf("middleware: dedup: %w", err)
			}
			st, staging := m.Fence.(keyStager)
			done := make(map[string]bool, len(check))
			for i, v := range seen {
				if v != nil || (staging && st.StagedKey(check[i])) {
					done[check[i]] = true
				}
			}
			keep := make([]Entry, 0, len(m.Entries))
			var record []string
			for i := range m.Entries {
				switch {
				case names[i] == "":
					keep = append(keep, m.Entries[i])
				case !done[names[i]]:
					done[names[i]] = true // a duplicate within the batch
					keep = append(keep, m.Entries[i])
					record = append(record, names[i])
				}
			}
			if len(keep) == 0 {
				return nil // all processed before: acknowledged
			}
			if len(keep) < len(m.Entries) {
				c := *m
				c.Entries = keep
				m = &c
			}
			if err := next(ctx, m); err != nil {
				return err
			}
			if len(record) == 0 {
				return nil
			}
			token := strconv.FormatInt(m.Token, 10)
			if staging {
				// recorded in the step that acknowledges the entries
				for _, k := range record {
					st.StageKey(k, []byte(token), o.TTL)
				}
				return nil
			}
			return m.Fence.Fenced(ctx, func(pipe redis.Pipeliner) error {
				rdb.DedupRecord(ctx, pipe, record, token, o.TTL)
				return nil
			})
		}
	}
}
