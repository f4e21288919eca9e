package cmd

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/leatdev/leat/internal/core"
	"github.com/urfave/cli/v2"
)

// sendChunk is how many entries one SendEntries call carries, so that the
// progress bar advances during a long send; SendEntries pipelines each chunk
// in batches of the app's SendBatch.
const sendChunk = 10_000

// keepLimit bounds the memory of sendmany: while the encoded records of the
// checking pass add up to less, they are kept and sent as they are; past it,
// they are dropped, and the sending pass reads and encodes the input again,
// a chunk at a time. Either way memory does not grow with the input.
const keepLimit = 8 << 20

// maxLine is the longest line sendmany reads.
const maxLine = 64 << 20

// bom is the UTF-8 byte-order mark some editors write at the start of a file.
var bom = []byte{0xEF, 0xBB, 0xBF}

func sendManyCommand(setup Setup) *cli.Command {
	return &cli.Command{
		Name:      "sendmany",
		Usage:     "send records given as JSON lines, from a file or - for stdin",
		ArgsUsage: "STREAM FILE|-",
		Description: "Every line holds one JSON object; blank lines are skipped, and a UTF-8\n" +
			"byte-order mark at the start is ignored. All lines are checked first: on the\n" +
			"first bad line the command names it, exits with status 2 and sends nothing.\n" +
			"Then the records are sent; records of one key keep the order of the lines.\n" +
			"Standard input that is not a file is copied to a temporary file while it is\n" +
			"checked, so memory stays small however long the input is.",
		Flags:        sendFlags(),
		HideHelp:     true, // see helpFlag
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			if err := wantArgs(c, "STREAM", "FILE|-"); err != nil {
				return err
			}
			opts, err := sendOptionsFrom(c)
			if err != nil {
				return err
			}
			name, path := c.Args().Get(0), c.Args().Get(1)
			in, err := openInput(path, c.App.Reader)
			if err != nil {
				return err
			}
			defer in.close()
			return withStream(c, setup, name, opts.routing, func(st *core.Core) error {
				return sendMany(c, st, in, opts.headers)
			})
		},
	}
}

// input is what sendmany reads: a file it can read twice, or a stream
// (stdin, a pipe) that the first pass copies to a temporary file.
type input struct {
	name   string    // for messages: the path, or "standard input"
	file   *os.File  // the input to read from start, or its copy; nil until a stream is copied
	start  int64     // offset of the first byte in file
	size   int64     // bytes to read, -1 when unknown
	stream io.Reader // the stream to copy; nil when file is the input
	close  func()    // closes what openInput opened and removes the copy
}

// openInput opens path, or r when path is "-". A directory or a missing file
// is a usage error.
func openInput(path string, r io.Reader) (*input, error) {
	in := &input{name: path, size: -1}
	var closers []func()
	in.close = func() {
		for _, c := range closers {
			c()
		}
	}
	if path == "-" {
		in.name, in.stream = "standard input", r
		if f, ok := r.(*os.File); ok {
			if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
				if off, err := f.Seek(0, io.SeekCurrent); err == nil {
					in.file, in.start, in.size, in.stream = f, off, st.Size()-off, nil
				}
			}
		}
	} else {
		st, err := os.Stat(path)
		switch {
		case errors.Is(err, os.ErrNotExist):
			return nil, usageErrorf("%s: no such file", path)
		case err != nil:
			return nil, usageError{err}
		case st.IsDir():
			return nil, usageErrorf("%s is a directory: want a file of JSON lines, or - for standard input", path)
		}
		f, err := os.Open(path)
		if err != nil {
			return nil, usageError{err}
		}
		closers = append(closers, func() { f.Close() })
		if st.Mode().IsRegular() {
			in.file, in.size = f, st.Size()
		} else { // a named pipe, a device: it can be read once only
			in.stream = f
		}
	}
	// The copy of a stream is made by the first pass; remove it at the end.
	closers = append(closers, func() {
		if in.stream != nil && in.file != nil {
			in.file.Close()
			os.Remove(in.file.Name())
		}
	})
	return in, nil
}

// rewind returns a reader of the whole input from its start, for a pass.
func (in *input) rewind() (io.Reader, error) {
	if _, err := in.file.Seek(in.start, io.SeekStart); err != nil {
		return nil, fmt.Errorf("read %s again: %w", in.name, err)
	}
	return bufio.NewReaderSize(in.file, 256<<10), nil
}

// Context keys through which tests watch and tune sendmany: a func(int)
// called after each chunk sent with the count sent so far, and an int
// replacing keepLimit.
type (
	chunkSentKey struct{}
	keepLimitKey struct{}
)

// sendMany checks every line of in, then sends them to core.
func sendMany(c *cli.Context, st *core.Core, in *input, h core.Headers) error {
	ctx := c.Context
	checkStart := time.Now()
	count, kept, err := checkLines(ctx, c, st, in, h)
	if err != nil {
		return err
	}
	checked := time.Since(checkStart)

	sendStart := time.Now()
	s := &sender{ctx: ctx, core: st, total: count,
		bar: newProgress(c.App.ErrWriter, int64(count), "sending to "+st.Name(), unitEvents)}
	s.hook, _ = ctx.Value(chunkSentKey{}).(func(int))
	defer s.bar.clear()
	if kept != nil {
		err = s.sendKept(kept)
	} else {
		err = s.sendAgain(in, h)
	}
	s.bar.clear()
	if err != nil {
		return err
	}
	elapsed := time.Since(sendStart)
	_, err = fmt.Fprintf(c.App.Writer, "sent %d %s to %s in %.2fs (%.0f events/s), checked in %.2fs\n",
		count, plural(count, "event"), st.Name(), elapsed.Seconds(),
		float64(count)/max(elapsed.Seconds(), 1e-9), checked.Seconds())
	return err
}

// checkLines encodes every non-blank line of in, a JSON object each, as an
// entry of core carrying headers h, and counts them. It fails on the first
// bad line with a lineError (lines numbered from 1, blank lines included).
// It returns the entries too while they take less than keepLimit bytes, else
// nil; a stream is copied to a temporary file as it is read.
func checkLines(ctx context.Context, c *cli.Context, st *core.Core, in *input, h core.Headers) (int, []core.Entry, error) {
	r, spool, err := in.reader("sendmany")
	if err != nil {
		return 0, nil, err
	}
	bar := newProgress(c.App.ErrWriter, in.size, "checking "+in.name, unitBytes)
	defer bar.clear()
	lr := newLineReader(r)
	var (
		count     int
		kept      []core.Entry
		keptBytes int
		keep      = true
		limit     = keepLimit
	)
	if l, ok := ctx.Value(keepLimitKey{}).(int); ok {
		limit = l
	}
	for {
		line, err := lr.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return 0, nil, err
		}
		bar.add(lr.lastSize)
		if lr.n%1024 == 0 && ctx.Err() != nil {
			return 0, nil, &interruptedError{checking: true, line: lr.n, name: in.name}
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		e, err := st.EncodeJSON(line, h)
		if err != nil {
			return 0, nil, lineError{line: lr.n, err: err}
		}
		count++
		if keep {
			keptBytes += len(e.Data) + len(e.Key) + 160 // with the Entry and its allocations
			if keptBytes > limit {
				keep, kept = false, nil
			} else {
				kept = append(kept, e)
			}
		}
	}
	if !keep {
		kept = nil
	} else if kept == nil {
		kept = []core.Entry{}
	}
	if ctx.Err() != nil {
		return 0, nil, &interruptedError{checking: true, line: lr.n, name: in.name}
	}
	if spool != nil {
		if err := spool.Flush(); err != nil {
			return 0, nil, fmt.Errorf("copy %s to a temporary file: %w", in.name, err)
		}
	}
	return count, kept, nil
}

// spoolWriter is the temporary copy of a stream; a write error (a full disk)
// is reported as such, not as a read error of the input.
type spoolWriter struct{ w io.Writer }

func (s *spoolWriter) Write(p []byte) (int, error) {
	n, err := s.w.Write(p)
	if err != nil {
		return n, fmt.Errorf("copy the input to a temporary file: %w", err)
	}
	return n, nil
}

// sender sends the checked records a chunk at a time.
type sender struct {
	ctx   context.Context
	core  *core.Core
	total int
	sent  int
	bar   progress
	hook  func(int)
}

// sendKept sends entries kept by the checking pass.
func (s *sender) sendKept(entries []core.Entry) error {
	for start := 0; start < len(entries); start += sendChunk {
		if err := s.send(entries[start:min(start+sendChunk, len(entries))]); err != nil {
			return err
		}
	}
	return nil
}

// sendAgain reads and encodes in again, sending it a chunk at a time.
func (s *sender) sendAgain(in *input, h core.Headers) error {
	r, err := in.rewind()
	if err != nil {
		return s.failed(err)
	}
	lr := newLineReader(r)
	chunk := make([]core.Entry, 0, sendChunk)
	for {
		line, err := lr.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return s.failed(err)
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		e, err := s.core.EncodeJSON(line, h)
		if err != nil {
			return s.failed(fmt.Errorf("line %d changed after it was checked: %w", lr.n, err))
		}
		chunk = append(chunk, e)
		if len(chunk) == sendChunk {
			if err := s.send(chunk); err != nil {
				return err
			}
			chunk = chunk[:0]
		}
	}
	if err := s.send(chunk); err != nil {
		return err
	}
	if s.sent != s.total {
		return s.failed(fmt.Errorf("%s changed after it was checked: %d records, not %d", in.name, s.sent, s.total))
	}
	return nil
}

// send sends one chunk.
func (s *sender) send(entries []core.Entry) error {
	if len(entries) == 0 {
		return nil
	}
	if s.ctx.Err() != nil {
		return s.failed(s.ctx.Err())
	}
	ids, err := s.core.SendEntries(s.ctx, entries)
	n := 0
	for _, id := range ids {
		if id != "" {
			n++
		}
	}
	s.sent += n
	s.bar.add(n)
	if err != nil {
		return s.failed(err)
	}
	if s.hook != nil {
		s.hook(s.sent)
	}
	return nil
}

// failed reports err after some records were sent: how many, once.
func (s *sender) failed(err error) error {
	if s.ctx.Err() != nil {
		return &interruptedError{sent: s.sent, total: s.total, stream: s.core.Name()}
	}
	return fmt.Errorf("sent %d of %d events to %s, then: %w", s.sent, s.total, s.core.Name(), err)
}

// interruptedError is a sendmany stopped by SIGINT or SIGTERM, while
// checking (nothing was sent) or while sending.
type interruptedError struct {
	checking    bool
	line        int    // checking: the line reached
	name        string // checking: the input
	sent, total int
	stream      string
}

func (e *interruptedError) Error() string {
	if e.checking {
		return fmt.Sprintf("interrupted while checking line %d of %s: nothing was sent", e.line, e.name)
	}
	return fmt.Sprintf("interrupted: sent %d of %d events to %s; the other %d were not sent",
		e.sent, e.total, e.stream, e.total-e.sent)
}

// lineReader reads lines of any length up to maxLine, counting them and
// skipping a byte-order mark at the start of the input.
type lineReader struct {
	br       *bufio.Reader
	buf      []byte
	n        int // number of the line last returned, from 1
	lastSize int // bytes of the line last returned, newline included
}

func newLineReader(r io.Reader) *lineReader {
	br, ok := r.(*bufio.Reader)
	if !ok {
		br = bufio.NewReaderSize(r, 256<<10)
	}
	return &lineReader{br: br}
}

// next returns the next line, valid until the following call, or io.EOF.
func (l *lineReader) next() ([]byte, error) {
	l.buf = l.buf[:0]
	for {
		frag, err := l.br.ReadSlice('\n')
		if len(l.buf)+len(frag) > maxLine {
			return nil, lineError{line: l.n + 1, err: fmt.Errorf("longer than %d MiB", maxLine>>20)}
		}
		l.buf = append(l.buf, frag...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("read line %d: %w", l.n+1, err)
		}
		if err != nil && len(l.buf) == 0 {
			return nil, io.EOF
		}
		l.n++
		l.lastSize = len(l.buf)
		line := l.buf
		if l.n == 1 {
			line = bytes.TrimPrefix(line, bom)
		}
		return line, nil
	}
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// reader returns the reader of the checking pass over in: the file itself,
// or, for a stream (stdin), a reader that copies what it reads to a
// temporary file named after cmd, through spool (flush it at the end), so
// the second pass can read it again.
func (in *input) reader(cmd string) (r io.Reader, spool *bufio.Writer, err error) {
	if in.stream == nil {
		r, err = in.rewind()
		return r, nil, err
	}
	f, err := os.CreateTemp("", "leat-"+cmd+"-*.jsonl")
	if err != nil {
		return nil, nil, fmt.Errorf("copy %s to a temporary file: %w", in.name, err)
	}
	in.file = f
	spool = bufio.NewWriterSize(f, 256<<10)
	return io.TeeReader(in.stream, &spoolWriter{w: spool}), spool, nil
}
