package rdb

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Exactly-once outputs: records a processor staged for other streams,
// written by the script that acknowledges the events they were sent for
// (CommitOutputs). On Redis Cluster they go to the source partition's
// outbox (OutboxEntry) and are relayed from it (RelayOutbox).

var (
	//go:embed output_commit.lua
	outputCommitSrc string
	outputCommit    = redis.NewScript(tableWritesSrc + "\n" + streamRoomSrc + "\n" + outputCommitSrc)

	//go:embed output_relay.lua
	outputRelaySrc string
	outputRelay    = redis.NewScript(outputRelaySrc)
)

// ErrOutputFull is returned when a stream that never trims unprocessed
// entries has no room for the outputs to add to it: nothing was applied.
var ErrOutputFull = errors.New("output stream has no room for unprocessed entries")

// OutputEntry is one entry to add to the stream Key: Fields (its field,
// value list), with XADD MAXLEN ~ Size (no MAXLEN when Size is 0), only if
// the stream has room when Guard (see guarded_add.lua).
type OutputEntry struct {
	Key    string
	Size   int64
	Guard  bool
	Fields []any
}

// Outbox entry fields, before the entry's own: the destination stream,
// partition, size and guard.
const (
	outboxStream    = "o:stream"
	outboxPartition = "o:p"
	outboxSize      = "o:size"
	outboxGuard     = "o:guard"
	outboxHead      = 8
)

// OutboxEntry returns the entry that carries e, bound for partition p of
// stream, in the outbox outbox.
func OutboxEntry(outbox, stream string, p int, e OutputEntry) OutputEntry {
	f := make([]any, 0, outboxHead+len(e.Fields))
	guard := "0"
	if e.Guard {
		guard = "1"
	}
	f = append(f, outboxStream, stream, outboxPartition, strconv.Itoa(p), outboxSize, strconv.FormatInt(e.Size, 10), outboxGuard, guard)
	return OutputEntry{Key: outbox, Fields: append(f, e.Fields...)}
}

// CommitOutputs is CommitTables with outputs: it applies writes, adds outs
// and acknowledges ids in one step, if lock still holds value; it reports
// whether it did (false: nothing applied). A guarded stream without room
// fails it with ErrOutputFull, nothing applied.
//
// A commit is named by name, unique to it and the same when it is tried
// again: a try whose reply was lost (a broken connection) may have been
// applied, and a try of the same commit then reports it applied without
// applying it twice (mark, the Committed key, holds the last name
// applied).
//
// KEYS: lock, stream, mark, the tables and keys written, the output
// streams. ARGV: value, group, name, len(ids), ids, len(writes), a triple
// per write, then a group per output (see output_commit.lua).
func CommitOutputs(ctx context.Context, c redis.Scripter, lock, value, stream, mark, group, name string, ids []string, writes []TableWrite, outs []OutputEntry) (bool, error) {
	keys := []string{lock, stream, mark}
	index := map[string]string{}
	at := func(k string) string {
		i, ok := index[k]
		if !ok {
			keys = append(keys, k)
			i = strconv.Itoa(len(keys))
			index[k] = i
		}
		return i
	}
	n := 5 + len(ids) + 3*len(writes)
	for _, o := range outs {
		n += 4 + len(o.Fields)
	}
	args := make([]any, 0, n)
	args = append(args, value, group, name, len(ids))
	for _, id := range ids {
		args = append(args, id)
	}
	args = append(args, len(writes))
	for _, w := range writes {
		field, op := w.Field, byte('s')
		switch {
		case w.TTL > 0:
			field, op = strconv.FormatInt(max(w.TTL.Milliseconds(), 1), 10), 'p'
		case w.Log > 0: // a change log's entry
			field, op = strconv.FormatInt(w.Log, 10), 'l'
		case w.Delete:
			op = 'd'
		}
		v := append(make([]byte, 0, 1+len(w.Value)), op)
		if op != 'd' {
			v = append(v, w.Value...)
		}
		args = append(args, at(w.Table), field, v)
	}
	for _, o := range outs {
		guard := "0"
		if o.Guard {
			guard = "1"
		}
		args = append(args, at(o.Key), strconv.FormatInt(o.Size, 10), guard, len(o.Fields))
		args = append(args, o.Fields...)
	}
	r, err := outputCommit.Run(ctx, c, keys, args...).Result()
	if err != nil {
		return false, err
	}
	switch v := r.(type) {
	case int64:
		return v == 1, nil
	case []any:
		if len(v) == 2 {
			return false, fmt.Errorf("%w: %v", ErrOutputFull, v[1])
		}
	}
	return false, fmt.Errorf("output commit: unexpected reply %v", r)
}

// RelayOutbox relays the entries of outbox, the outbox of processor on
// partition p of stream, to their partitions (output_relay.lua: an entry
// relayed before is not added again), in pages of up to page entries, and
// deletes those relayed, until it is empty. The partitions of a page are
// relayed to concurrently, one script each. It returns how many entries it
// took from the outbox, and the first error met: the entries of a
// destination that failed stay in the outbox, for the next relay, as do
// those of a guarded partition without room (ErrOutputFull).
func RelayOutbox(ctx context.Context, c redis.UniversalClient, ks KeySpace, outbox, source string, page int64) (int, error) {
	total := 0
	for {
		msgs, err := c.XRangeN(ctx, outbox, "-", "+", page).Result()
		if err != nil {
			return total, err
		}
		if len(msgs) == 0 {
			return total, nil
		}
		done, err := relayPage(ctx, c, ks, source, msgs)
		if len(done) > 0 {
			if derr := c.XDel(ctx, outbox, done...).Err(); derr != nil && err == nil {
				err = derr
			}
			total += len(done)
		}
		if err != nil {
			return total, err
		}
		if int64(len(msgs)) < page {
			return total, nil
		}
	}
}

type relayDest struct {
	stream string
	p      int
	size   string
	guard  string
	ids    []string
	args   []any
}

// relayPage relays msgs, outbox entries, grouped by destination, and
// returns the IDs of those relayed.
func relayPage(ctx context.Context, c redis.UniversalClient, ks KeySpace, source string, msgs []redis.XMessage) ([]string, error) {
	var order []string
	dests := map[string]*relayDest{}
	var bad []string
	for _, m := range msgs {
		d, fields, err := parseOutbox(m)
		if err != nil {
			bad = append(bad, m.ID) // not an outbox entry: dropped (see parseOutbox)
			continue
		}
		k := d.stream + "\x00" + strconv.Itoa(d.p)
		have, ok := dests[k]
		if !ok {
			have = d
			dests[k] = d
			order = append(order, k)
		}
		have.ids = append(have.ids, m.ID)
		have.args = append(have.args, m.ID, len(fields))
		have.args = append(have.args, fields...)
	}
	errs := make([]error, len(order))
	var wg sync.WaitGroup
	for i, k := range order {
		d := dests[k]
		wg.Add(1)
		go func() {
			defer wg.Done()
			args := append([]any{source, d.size, d.guard}, d.args...)
			r, err := outputRelay.Run(ctx, c, []string{ks.Partition(d.stream, d.p), ks.Relayed(d.stream, d.p)}, args...).Slice()
			switch {
			case err != nil:
				errs[i] = fmt.Errorf("relay to %s partition %d: %w", d.stream, d.p, err)
			case len(r) == 2 && r[0] == int64(0):
				errs[i] = fmt.Errorf("relay to %s partition %d: %w (%v unprocessed)", d.stream, d.p, ErrOutputFull, r[1])
			}
		}()
	}
	wg.Wait()
	done := bad
	for i, k := range order {
		if errs[i] == nil {
			done = append(done, dests[k].ids...)
		}
	}
	return done, errors.Join(errs...)
}

// parseOutbox reads the destination of an outbox entry and the entry's own
// fields. The outbox is written only by the commit script; an entry
// without a valid destination cannot be relayed anywhere.
func parseOutbox(m redis.XMessage) (*relayDest, []any, error) {
	d := &relayDest{}
	stream, _ := m.Values[outboxStream].(string)
	p, err := strconv.Atoi(fmt.Sprint(m.Values[outboxPartition]))
	if err != nil || p < 0 || CheckName("stream", stream) != nil {
		return nil, nil, fmt.Errorf("outbox entry %s: no valid destination", m.ID)
	}
	d.stream, d.p = stream, p
	d.size, _ = m.Values[outboxSize].(string)
	if _, err := strconv.ParseInt(d.size, 10, 64); err != nil {
		return nil, nil, fmt.Errorf("outbox entry %s: no valid size", m.ID)
	}
	d.guard, _ = m.Values[outboxGuard].(string)
	// the entry's fields in the order senders write them: key, codec,
	// data, then the headers by name
	fields := make([]any, 0, 2*len(m.Values))
	for _, k := range []string{"key", "codec", "data"} {
		if v, ok := m.Values[k]; ok {
			fields = append(fields, k, v)
		}
	}
	var rest []string
	for k := range m.Values {
		switch k {
		case outboxStream, outboxPartition, outboxSize, outboxGuard, "key", "codec", "data":
			continue
		}
		rest = append(rest, k)
	}
	slices.Sort(rest)
	for _, k := range rest {
		fields = append(fields, k, m.Values[k])
	}
	return d, fields, nil
}
