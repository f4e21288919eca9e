package middleware

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/leatdev/leat/internal/keys"
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

// ErrDedupConfig is returned by the handlers of a Dedup given a message
// without Redis access (no client or no partition fence).
var ErrDedupConfig = errors.New("middleware: dedup needs a message with a Redis client and a partition fence")

// Dedup returns a middleware skipping an event whose idempotency key was
// already processed by the processor within TTL: the event is acknowledged
// without reaching the loop body. Keys are recorded in Redis once the
// handling succeeded, so they hold across workers and restarts, and are
// recorded with a fenced write carrying the partition's fencing token: a
// worker that lost the partition (paused past its lock expiry) cannot mark
// an event done; its handling fails with stream.ErrNotOwner instead.
//
// Keys are kept in the partition's hash slot: an idempotency key is
// recognised within a partition, which holds for duplicates of a record
// sent with the same partition key. In a batch, entries already processed
// are left out of what the loop body sees. An event processed whose record
// was lost (a crash between the loop body and the write) is processed
// again: at-least-once still holds.
//
// Not for processors that keep tables (stream.DeclareTable): the record is
// written before the table's commit, so a crash between the two leaves the
// event recorded and its table writes unapplied, and its redelivery is
// skipped. Keep what tells a duplicate (an ID or a sequence number per key)
// in the table instead.
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
					names[i] = m.Fence.LocalKey(keys.Dedup(m.Processor, id))
					check = append(check, names[i])
				}
			}
			if len(check) == 0 {
				return next(ctx, m)
			}
			seen, err := m.Client.MGet(ctx, check...).Result()
			if err != nil {
				return fmt.Errorf("middleware: dedup: %w", err)
			}
			done := make(map[string]bool, len(check))
			for i, v := range seen {
				if v != nil {
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
			return m.Fence.Fenced(ctx, func(pipe redis.Pipeliner) error {
				for _, k := range record {
					pipe.Set(ctx, k, token, o.TTL)
				}
				return nil
			})
		}
	}
}
