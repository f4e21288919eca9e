package rdb

import (
	"context"
	"fmt"
	"strings"

	"github.com/leatdev/leat/internal/resp"
	"github.com/redis/go-redis/v9"
)

// Stream replies read raw. go-redis parses a generic reply into a tree of
// interfaces, two allocations per string (the bytes and the interface), a
// dozen per stream entry. The fetcher reads XREADGROUP replies as raw RESP
// bytes instead (redis.RawCmd) and walks them here: the entries' IDs share
// one string made from the reply, their field values are slices of the reply
// itself, so an entry costs no allocation.

// EachRawEntry calls fn for each entry of a raw RESP2 or RESP3 reply of
// XREADGROUP or XREAD on one stream (a null reply has none), in order. id
// may be kept; fields (field, value, ...) is reused from one call to the
// next, but the byte slices in it point into raw and may be kept as long as
// raw is not modified. An entry deleted since it was delivered has no
// fields.
func EachRawEntry(raw []byte, fn func(id string, fields [][]byte) error) error {
	r := resp.NewReader(raw)
	n, err := r.Aggregate()
	if err != nil || n <= 0 {
		return err
	}
	// RESP2: [[key, entries]]; RESP3: {key: entries}. One stream.
	if r.Peek() == '*' {
		if m, err := r.Aggregate(); err != nil || m != 2 {
			return cmpErr(err, "stream pair")
		}
	}
	if err := r.Skip(); err != nil { // the key
		return err
	}
	return readEntries(&r, fn)
}

// EachRawStream calls fn with the key of each stream of a raw RESP2 or
// RESP3 reply of XREAD or XREADGROUP (a null reply has none), in order, and
// skips their entries. key points into raw.
func EachRawStream(raw []byte, fn func(key []byte)) error {
	r := resp.NewReader(raw)
	resp3 := r.Peek() == '%'
	n, err := r.Aggregate()
	if err != nil || n <= 0 {
		return err
	}
	if resp3 { // {key: entries, ...}
		n /= 2
	}
	for range n {
		if !resp3 { // [[key, entries], ...]
			if m, err := r.Aggregate(); err != nil || m != 2 {
				return cmpErr(err, "stream pair")
			}
		}
		from, to, null, err := r.Bulk()
		if err != nil || null {
			return cmpErr(err, "stream key")
		}
		fn(raw[from:to:to])
		if err := r.Skip(); err != nil {
			return err
		}
	}
	return nil
}

// readEntries reads an array of stream entries ({id, {field, value, ...}}),
// calling fn for each (see EachRawEntry).
func readEntries(r *resp.Reader, fn func(id string, fields [][]byte) error) error {
	entries, err := r.Aggregate()
	if err != nil || entries <= 0 {
		return err
	}
	raw := r.Reply()
	ids := entryIDs(*r, entries) // the IDs share one string
	at := 0
	fields := make([][]byte, 0, 8)
	for range entries {
		if m, err := r.Aggregate(); err != nil || m != 2 {
			return cmpErr(err, "stream entry")
		}
		from, to, null, err := r.Bulk()
		if err != nil || null {
			return cmpErr(err, "stream entry ID")
		}
		if at+to-from > len(ids) {
			return cmpErr(nil, "stream entry ID")
		}
		id := ids[at : at+to-from]
		at += to - from
		nf, err := r.Aggregate()
		if err != nil {
			return err
		}
		fields = fields[:0]
		for range max(nf, 0) {
			from, to, null, err := r.Bulk()
			if err != nil || null {
				return cmpErr(err, "stream entry field")
			}
			fields = append(fields, raw[from:to:to])
		}
		if err := fn(id, fields); err != nil {
			return err
		}
	}
	return nil
}

// entryIDs returns the IDs of the next entries (an array of entries follows),
// one after the other in one string, without moving r: one string for all
// the IDs of a read rather than one each, or a copy of the whole reply
// (their fields are slices of the reply). It stops at the first malformed
// entry, which the caller reports.
func entryIDs(r resp.Reader, entries int) string {
	var b strings.Builder
	room := r.Left() // the IDs are within the reply
	if entries < room/20 {
		room = entries * 20 // "1763856000123-0"
	}
	b.Grow(room)
	for range entries {
		if m, err := r.Aggregate(); err != nil || m != 2 {
			break
		}
		from, to, null, err := r.Bulk()
		if err != nil || null {
			break
		}
		b.Write(r.Reply()[from:to])
		if r.Skip() != nil {
			break
		}
	}
	return b.String()
}

func cmpErr(err error, what string) error {
	if err != nil {
		return err
	}
	return fmt.Errorf("malformed %s in stream reply", what)
}

// RawFetch is a fenced read queued by FetchRaw: its reply is read raw, in
// one slice of its own.
type RawFetch struct {
	cmd OnceCmd
}

// OnceCmd is a command whose reply is read raw into one slice of its own
// (go-redis's RawCmd reads a reply in a few growing allocations, where
// RawWriteToCmd makes one per bulk string), and which go-redis never sends
// again when its reply breaks off, whatever the client's retries: a fenced
// read of new entries that ran once already would take the next entries,
// leaving the first ones in the reader's pending list, unseen.
type OnceCmd struct{ *redis.RawCmd }

// NewOnceCmd returns the command args, to run or queue with Process.
func NewOnceCmd(ctx context.Context, args ...any) OnceCmd {
	return OnceCmd{redis.NewRawCmd(ctx, args...)}
}

// NoRetry tells go-redis not to send the command again.
func (OnceCmd) NoRetry() bool { return true }

// Err returns the error of the read's round trip, if any (a reply that is
// an error comes out of ParseRawFetch).
func (f *RawFetch) Err() error { return f.cmd.Err() }

// Processor runs or queues a command: a client or connection runs it at
// once, a pipeline queues it.
type Processor interface {
	Process(ctx context.Context, cmd redis.Cmder) error
}

// FetchArgs are the arguments of one partition's fenced reads (KEYS: Lock,
// Partition; ARGV: token, Group, Consumer, count, cursor), boxed once: a
// read reuses the last one's, changing what changed. The reads of one
// partition must not overlap.
type FetchArgs struct {
	Lock, Partition, Group, Consumer string

	args []any
}

func (a *FetchArgs) list(token string, count int, cursor string) []any {
	if a.args == nil {
		a.args = []any{"EVALSHA", fetch.Hash(), 2, a.Lock, a.Partition, token, a.Group, a.Consumer, count, cursor}
		return a.args
	}
	if a.args[5].(string) != token {
		a.args[5] = token
	}
	if a.args[8].(int) != count {
		a.args[8] = count
	}
	if a.args[9].(string) != cursor {
		a.args[9] = cursor
	}
	return a.args
}

// FetchRaw runs or queues on pipe a fenced read of one partition (see
// fetch.lua) as a raw command: its reply is read into one slice, which the
// entries ParseRawFetch hands out point into. token is the
// partition lock's; cursor "" reads new entries, otherwise it continues
// recovery from cursor. Load the scripts (Load) and queue the reads again
// when ParseRawFetch says NOSCRIPT (IsNoScript).
func FetchRaw(ctx context.Context, pipe Processor, a *FetchArgs, token string, count int, cursor string) *RawFetch {
	cmd := NewOnceCmd(ctx, a.list(token, count, cursor)...)
	_ = pipe.Process(ctx, cmd)
	return &RawFetch{cmd: cmd}
}

// reply returns a reader of f's reply, past the header of its top array,
// and the array's length.
func (f *RawFetch) reply() (resp.Reader, int, error) {
	raw, err := f.cmd.Result()
	if err != nil {
		return resp.Reader{}, 0, err
	}
	r := resp.NewReader(raw)
	n, err := r.Aggregate()
	return r, n, err
}

// ParseRawFetch reads the reply of FetchRaw, calling fn with each entry
// read, in order (its fields point into the reply, see EachRawEntry).
func ParseRawFetch(f *RawFetch, fn func(id string, fields [][]byte) error) (FetchResult, error) {
	var res FetchResult
	r, n, err := f.reply()
	if err != nil {
		return res, err
	}
	if n < 1 {
		return res, fmt.Errorf("fetch: empty reply")
	}
	if st, err := r.Integer(); err != nil || st == 0 {
		return res, err
	}
	if n < 6 {
		return res, fmt.Errorf("fetch: short reply (%d elements)", n)
	}
	res.Held = true
	if res.Cursor, err = r.Text(); err != nil {
		return res, err
	}
	if err := readEntries(&r, fn); err != nil {
		return res, err
	}
	m, err := r.Aggregate()
	if err != nil {
		return res, err
	}
	for range max(m, 0) {
		c, err := r.Integer()
		if err != nil {
			return res, err
		}
		res.Counts = append(res.Counts, c)
	}
	if m, err = r.Aggregate(); err != nil {
		return res, err
	}
	for range max(m, 0) {
		id, err := r.Text()
		if err != nil {
			return res, err
		}
		res.Deleted = append(res.Deleted, id)
	}
	res.Last, err = r.Text()
	return res, err
}

// IdlePartition is one partition of an idle fetcher's fenced read
// (FetchIdle): its lock's key, its stream's key and the caller's lock token,
// each a string in an interface value. The caller boxes each once and keeps
// it while it holds (a key for good, a token as long as the lock), so that
// a read goes without boxing strings per partition: a wake-up of a fetcher
// idle on 16 partitions made 70 allocations for its arguments.
type IdlePartition struct {
	Lock, Stream, Token any
}

// FetchIdle queues on pipe the fenced read of the partitions of an idle
// fetcher (fetch_idle.lua), to go right behind its blocking read on the
// same connection, reading at most count new entries of each; group and
// consumer are strings, boxed once by the caller as parts' fields are;
// args is reused memory for the command's arguments (returned for the next
// call). Parse the reply with ParseRawFetchIdle.
func FetchIdle(ctx context.Context, pipe Processor, group, consumer any, count int, parts []IdlePartition, args []any) (*RawFetch, []any) {
	n := len(parts)
	args = append(args[:0], "EVALSHA", fetchIdle.Hash(), 2*n)
	for _, p := range parts {
		args = append(args, p.Lock)
	}
	for _, p := range parts {
		args = append(args, p.Stream)
	}
	args = append(args, group, consumer, count)
	for _, p := range parts {
		args = append(args, p.Token)
	}
	cmd := NewOnceCmd(ctx, args...)
	_ = pipe.Process(ctx, cmd)
	return &RawFetch{cmd: cmd}, args
}

// ParseRawFetchIdle reads the reply of FetchIdle: lost is called with the
// index in parts of each partition with new entries whose lock the caller
// does not hold, fn with each entry read of partition i, in order (its
// fields point into the reply, see EachRawEntry). ran is false when the
// read failed in Redis and read nothing. An error reply (NOSCRIPT:
// IsNoScript) comes back as err.
func ParseRawFetchIdle(f *RawFetch, lost func(i int), fn func(i int, id string, fields [][]byte) error) (ran bool, err error) {
	r, n, err := f.reply()
	if err != nil {
		return false, err
	}
	if n < 2 {
		return false, fmt.Errorf("fetch_idle: short reply (%d elements)", n)
	}
	m, err := r.Aggregate()
	if err != nil {
		return false, err
	}
	for range max(m, 0) {
		i, err := r.Integer()
		if err != nil {
			return false, err
		}
		lost(int(i) - 1)
	}
	read, err := r.Integer()
	if err != nil || read == 0 {
		return false, err
	}
	for k := 2; k+1 < n; k += 2 {
		i, err := r.Integer()
		if err != nil {
			return true, err
		}
		if err := readEntries(&r, func(id string, fields [][]byte) error { return fn(int(i)-1, id, fields) }); err != nil {
			return true, err
		}
	}
	return true, nil
}
