// Package resp reads raw Redis replies (RESP2 and RESP3) in place: a reply
// read whole into one slice (redis.NewRawWriteToCmd) is walked value by
// value, strings given as offsets into it, so that reading a large reply
// costs no allocation per value (go-redis's generic parse makes a tree of
// interfaces, two allocations per string).
package resp

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
)

// Reader walks a complete raw RESP2 or RESP3 reply held in one slice.
type Reader struct {
	b   []byte
	pos int
}

// NewReader returns a Reader at the start of reply.
func NewReader(reply []byte) Reader { return Reader{b: reply} }

// Reply returns the whole reply the reader walks.
func (r *Reader) Reply() []byte { return r.b }

// Left returns how many bytes of the reply are still to be read.
func (r *Reader) Left() int { return len(r.b) - r.pos }

var errShortReply = errors.New("short RESP reply")

// line returns the type byte and the rest of the next line, and moves past
// it.
// A line holds no CR but its end (RESP): the first CR ends it.
func (r *Reader) line() (byte, []byte, error) {
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
// Aggregate and Bulk, without scanning for the line's end first.
func (r *Reader) length(t byte) (int, bool) {
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

// Peek returns the type byte of the next value.
func (r *Reader) Peek() byte {
	if r.pos >= len(r.b) {
		return 0
	}
	return r.b[r.pos]
}

// Aggregate reads an array, set or map header and returns its number of
// elements (2 per map entry), -1 for a null. An error reply is returned as
// an error. A count the rest of the reply cannot hold (every element takes
// 3 bytes at least) is a short reply: no caller sizes memory by it.
func (r *Reader) Aggregate() (int, error) {
	n, err := r.aggregate()
	if err == nil && n > r.Left()/3 {
		return 0, errShortReply
	}
	return n, err
}

func (r *Reader) aggregate() (int, error) {
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

// Bulk reads a bulk or simple string and returns its offsets in the reply,
// or null.
func (r *Reader) Bulk() (from, to int, null bool, err error) {
	if n, ok := r.length('$'); ok {
		if n > r.Left()-2 {
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
		if n > r.Left()-2 { // (n+2 could overflow)
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

// Integer reads an integer.
func (r *Reader) Integer() (int64, error) {
	t, rest, err := r.line()
	if err != nil {
		return 0, err
	}
	switch t {
	case ':':
		return parseInt(rest)
	case '-', '!':
		return 0, errors.New(string(rest))
	}
	return 0, fmt.Errorf("RESP: integer expected, got %q", t)
}

// Number reads an integer, or a string holding one in decimal (a Lua
// script returns a number it read from Redis as such, without converting
// it twice).
func (r *Reader) Number() (int64, error) {
	if r.Peek() == ':' {
		return r.Integer()
	}
	from, to, null, err := r.Bulk()
	if err != nil {
		return 0, err
	}
	if null {
		return 0, errors.New("RESP: number expected, got a null")
	}
	n, err := parseInt(r.b[from:to])
	if err != nil {
		return 0, fmt.Errorf("RESP: number expected, got %q", r.b[from:to])
	}
	return n, nil
}

// parseInt reads a decimal integer, without allocating up to 18 digits.
func parseInt(b []byte) (int64, error) {
	neg := len(b) > 1 && b[0] == '-'
	digits := b
	if neg {
		digits = b[1:]
	}
	if n, err := atoi(digits); err == nil {
		if neg {
			return -int64(n), nil
		}
		return int64(n), nil
	}
	return strconv.ParseInt(string(b), 10, 64)
}

// Text reads a string ("" for a null) as a new string.
func (r *Reader) Text() (string, error) {
	from, to, null, err := r.Bulk()
	if err != nil || null {
		return "", err
	}
	return string(r.b[from:to]), nil
}

// Skip moves past the next value, whatever it is.
func (r *Reader) Skip() error {
	switch r.Peek() {
	case '*', '~', '>', '%':
		n, err := r.Aggregate()
		if err != nil {
			return err
		}
		for range max(n, 0) {
			if err := r.Skip(); err != nil {
				return err
			}
		}
		return nil
	case '$':
		_, _, _, err := r.Bulk()
		return err
	}
	_, _, err := r.line()
	return err
}
