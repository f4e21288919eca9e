package rdb

import (
	"io"
	"slices"
)

// ReplyBuffer receives a raw reply (redis.NewRawWriteToCmd) in one slice.
// go-redis copies each bulk string of a raw reply with io.CopyN, which
// fills a bytes.Buffer through ReadFrom, and bytes.Buffer makes room for
// 512 more bytes at every call: a buffer sized for the whole reply still
// grows, and copies itself, as soon as less than that is left. A
// ReplyBuffer grows by what each string holds, so one sized for the reply
// never grows.
type ReplyBuffer struct{ b []byte }

// NewReplyBuffer returns an empty buffer with room for size bytes.
func NewReplyBuffer(size int) *ReplyBuffer { return &ReplyBuffer{b: make([]byte, 0, size)} }

// Bytes returns the reply read; it is valid until the next Reset.
func (w *ReplyBuffer) Bytes() []byte { return w.b }

// Len returns the size of the reply read.
func (w *ReplyBuffer) Len() int { return len(w.b) }

// Cap returns the room the buffer has.
func (w *ReplyBuffer) Cap() int { return cap(w.b) }

// Reset empties the buffer, keeping its room.
func (w *ReplyBuffer) Reset() { w.b = w.b[:0] }

// Write appends p.
func (w *ReplyBuffer) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

// maxStep bounds what ReadFrom makes room for ahead of reading it.
const maxStep = 1 << 20

// ReadFrom appends what r holds until its end: for an io.LimitedReader
// (what io.CopyN reads from), room for exactly what is left.
func (w *ReplyBuffer) ReadFrom(r io.Reader) (int64, error) {
	l, limited := r.(*io.LimitedReader)
	var n int64
	for {
		switch {
		case limited && l.N <= 0:
			return n, nil
		case limited:
			w.b = slices.Grow(w.b, int(min(l.N, maxStep)))
		case len(w.b) == cap(w.b):
			w.b = slices.Grow(w.b, 512)
		}
		m, err := r.Read(w.b[len(w.b):cap(w.b)])
		w.b = w.b[:len(w.b)+m]
		n += int64(m)
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}
