package scripts

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

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
	r := respReader{b: raw}
	n, err := r.aggregate()
	if err != nil || n <= 0 {
		return err
	}
	// RESP2: [[key, entries]]; RESP3: {key: entries}. One stream.
	if r.peek() == '*' {
		if m, err := r.aggregate(); err != nil || m != 2 {
			return cmpErr(err, "stream pair")
		}
	}
	if err := r.skip(); err != nil { // the key
		return err
	}
	return r.entries(fn)
}

// EachRawStream calls fn with the key of each stream of a raw RESP2 or
// RESP3 reply of XREAD or XREADGROUP (a null reply has none), in order, and
// skips their entries. key points into raw.
func EachRawStream(raw []byte, fn func(key []byte)) error {
	r := respReader{b: raw}
	resp3 := r.peek() == '%'
	n, err := r.aggregate()
	if err != nil || n <= 0 {
		return err
	}
	if resp3 { // {key: entries, ...}
		n /= 2
	}
	for range n {
		if !resp3 { // [[key, entries], ...]
			if m, err := r.aggregate(); err != nil || m != 2 {
				return cmpErr(err, "stream pair")
			}
		}
		from, to, null, err := r.bulk()
		if err != nil || null {
			return cmpErr(err, "stream key")
		}
		fn(raw[from:to:to])
		if err := r.skip(); err != nil {
			return err
		}
	}
	return nil
}

// entries reads an array of stream entries ({id, {field, value, ...}}),
// calling fn for each (see EachRawEntry).
func (r *respReader) entries(fn func(id string, fields [][]byte) error) error {
	entries, err := r.aggregate()
	if err != nil || entries <= 0 {
		return err
	}
	raw := r.b
	ids := r.ids(entries) // the IDs share one string
	at := 0
	fields := make([][]byte, 0, 8)
	for range entries {
		if m, err := r.aggregate(); err != nil || m != 2 {
			return cmpErr(err, "stream entry")
		}
		from, to, null, err := r.bulk()
		if err != nil || null {
			return cmpErr(err, "stream entry ID")
		}
		if at+to-from > len(ids) {
			return cmpErr(nil, "stream entry ID")
		}
		id := ids[at : at+to-from]
		at += to - from
		nf, err := r.aggregate()
		if err != nil {
			return err
		}
		fields = fields[:0]
		for range max(nf, 0) {
			from, to, null, err := r.bulk()
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

// ids returns the IDs of the next entries (an array of entries follows),
// one after the other in one string, without moving r: one string for all
// the IDs of a read rather than one each, or a copy of the whole reply
// (their fields are slices of the reply). It stops at the first malformed
// entry, which the caller reports.
func (r respReader) ids(entries int) string {
	var b strings.Builder
	room := len(r.b) - r.pos // the IDs are within the reply
	if entries < room/20 {
		room = entries * 20 // "1763856000123-0"
	}
	b.Grow(room)
	for range entries {
		if m, err := r.aggregate(); err != nil || m != 2 {
			break
		}
		from, to, null, err := r.bulk()
		if err != nil || null {
			break
		}
		b.Write(r.b[from:to])
		if r.skip() != nil {
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

// RawFetch is a fenced read queued by FetchRaw: its reply is read raw into
// a buffer of its own.
type RawFetch struct {
	cmd *redis.RawWriteToCmd
	buf *ReplyBuffer
}

// Size returns the size of the reply read, in bytes.
func (f *RawFetch) Size() int { return f.buf.Len() }

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
// fetch.lua) as a raw command whose reply goes into a buffer of size bytes
// (it grows if the reply is larger), so that reading it does not grow and
// copy it many times over; read it with ParseRawFetch. token is the
// partition lock's; cursor "" reads new entries, otherwise it continues
// recovery from cursor. Load the scripts (Load) and queue the reads again
// when ParseRawFetch says NOSCRIPT (IsNoScript).
func FetchRaw(ctx context.Context, pipe Processor, size int, a *FetchArgs, token string, count int, cursor string) *RawFetch {
	buf := NewReplyBuffer(max(size, 64))
	cmd := redis.NewRawWriteToCmd(ctx, buf, a.list(token, count, cursor)...)
	_ = pipe.Process(ctx, cmd)
	return &RawFetch{cmd: cmd, buf: buf}
}

func ParseRawFetch(f *RawFetch, fn func(id string, fields [][]byte) error) (FetchResult, error) {
	var res FetchResult
	if _, err := f.cmd.Result(); err != nil {
		return res, err
	}
	raw := f.buf.Bytes()
	r := respReader{b: raw}
	n, err := r.aggregate()
	if err != nil {
		return res, err
	}
	if n < 1 {
		return res, fmt.Errorf("fetch: empty reply")
	}
	if st, err := r.integer(); err != nil || st == 0 {
		return res, err
	}
	if n < 6 {
		return res, fmt.Errorf("fetch: short reply (%d elements)", n)
	}
	res.Held = true
	if res.Cursor, err = r.text(); err != nil {
		return res, err
	}
	if err := r.entries(fn); err != nil {
		return res, err
	}
	m, err := r.aggregate()
	if err != nil {
		return res, err
	}
	for range max(m, 0) {
		c, err := r.integer()
		if err != nil {
			return res, err
		}
		res.Counts = append(res.Counts, c)
	}
	if m, err = r.aggregate(); err != nil {
		return res, err
	}
	for range max(m, 0) {
		id, err := r.text()
		if err != nil {
			return res, err
		}
		res.Deleted = append(res.Deleted, id)
	}
	res.Last, err = r.text()
	return res, err
}

// respReader walks a complete raw RESP reply.
type respReader struct {
	b   []byte
	pos int
}

var errShortReply = errors.New("short RESP reply")

// line returns the type byte and the rest of the next line, and moves past
// it.
// A line holds no CR but its end (RESP): the first CR ends it.
func (r *respReader) line() (byte, []byte, error) {
	b := r.b[r.pos:]
	i := bytes.IndexByte(b, '\r')
	if i < 1 || i+1 >= len(b) || b[i+1] != '\n' {
		return 0, nil, errShortReply
	}
	r.pos += i + 2
	return b[0], b[1:i], nil
}

// length reads, when the next line is of type t and holds a length of up
// to 18 digits (the common "$5", "*2"), that length, and moves past the
// line; otherwise it reports false and does not move: the common case of
// aggregate and bulk, without scanning for the line's end first.
func (r *respReader) length(t byte) (int, bool) {
	b := r.b
	if r.pos >= len(b) || b[r.pos] != t {
		return 0, false
	}
	i := r.pos + 1
	n, j := 0, i
	for ; j < len(b) && j-i < 18 && '0' <= b[j] && b[j] <= '9'; j++ {
		n = 10*n + int(b[j]-'0')
	}
	if j == i || j+1 >= len(b) || b[j] != '\r' || b[j+1] != '\n' {
		return 0, false
	}
	r.pos = j + 2
	return n, true
}

// atoi parses the decimal integer b, digits only without a call to strconv
// (the lengths and counts of a reply).
func atoi(b []byte) (int, error) {
	if len(b) == 0 || len(b) > 18 {
		return strconv.Atoi(string(b))
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return strconv.Atoi(string(b)) // a sign, or an error to report
		}
		n = 10*n + int(c-'0')
	}
	return n, nil
}

// peek returns the type byte of the next value.
func (r *respReader) peek() byte {
	if r.pos >= len(r.b) {
		return 0
	}
	return r.b[r.pos]
}

// aggregate reads an array, set or map header and returns its number of
// elements (2 per map entry), -1 for a null. An error reply is returned as
// an error.
func (r *respReader) aggregate() (int, error) {
	if n, ok := r.length('*'); ok {
		return n, nil
	}
	t, rest, err := r.line()
	if err != nil {
		return 0, err
	}
	switch t {
	case '*', '~', '>':
		return atoi(rest)
	case '%':
		n, err := atoi(rest)
		return 2 * n, err
	case '_':
		return -1, nil
	case '-', '!':
		return 0, errors.New(string(rest))
	}
	return 0, fmt.Errorf("RESP: aggregate expected, got %q", t)
}

// bulk reads a bulk or simple string and returns its offsets in the reply,
// or null.
func (r *respReader) bulk() (from, to int, null bool, err error) {
	if n, ok := r.length('$'); ok {
		if len(r.b)-r.pos < n+2 {
			return 0, 0, false, errShortReply
		}
		from = r.pos
		r.pos += n + 2
		return from, from + n, false, nil
	}
	t, rest, err := r.line()
	if err != nil {
		return 0, 0, false, err
	}
	switch t {
	case '+':
		return r.pos - 2 - len(rest), r.pos - 2, false, nil
	case '_':
		return 0, 0, true, nil
	case '$':
		n, err := atoi(rest)
		if err != nil || n < 0 {
			return 0, 0, true, err
		}
		if len(r.b)-r.pos < n+2 {
			return 0, 0, false, errShortReply
		}
		from = r.pos
		r.pos += n + 2
		return from, from + n, false, nil
	case '-', '!':
		return 0, 0, false, errors.New(string(rest))
	}
	return 0, 0, false, fmt.Errorf("RESP: string expected, got %q", t)
}

// integer reads an integer.
func (r *respReader) integer() (int64, error) {
	t, rest, err := r.line()
	if err != nil {
		return 0, err
	}
	switch t {
	case ':':
		return strconv.ParseInt(string(rest), 10, 64)
	case '-', '!':
		return 0, errors.New(string(rest))
	}
	return 0, fmt.Errorf("RESP: integer expected, got %q", t)
}

// text reads a string ("" for a null) as a new string.
func (r *respReader) text() (string, error) {
	from, to, null, err := r.bulk()
	if err != nil || null {
		return "", err
	}
	return string(r.b[from:to]), nil
}

// skip moves past the next value, whatever it is.
func (r *respReader) skip() error {
	switch r.peek() {
	case '*', '~', '>', '%':
		n, err := r.aggregate()
		if err != nil {
			return err
		}
		for range max(n, 0) {
			if err := r.skip(); err != nil {
				return err
			}
		}
		return nil
	case '$':
		_, _, _, err := r.bulk()
		return err
	}
	_, _, err := r.line()
	return err
}
