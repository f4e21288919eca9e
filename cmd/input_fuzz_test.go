package cmd

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"testing"
)

// FuzzLineReader checks the reader of sendmany's (and enqueue --file's)
// input against splitting it after each newline: the same lines in order,
// newlines kept, a byte-order mark dropped from the first line only, line
// numbers counted from 1, then io.EOF. The reader's buffer is small so that
// lines arrive in fragments.
func FuzzLineReader(f *testing.F) {
	f.Add([]byte("{\"key\":\"k1\"}\n{\"key\":\"k2\"}\n"))
	f.Add([]byte("\xef\xbb\xbf{\"key\":\"k1\"}\r\n\n\xef\xbb\xbf{}"))
	f.Add([]byte("0123456789abcdefghijklmnopqrstuvwxyz\nshort"))
	f.Fuzz(func(t *testing.T, data []byte) {
		l := newLineReader(bufio.NewReaderSize(bytes.NewReader(data), 16))
		want := bytes.SplitAfter(data, []byte("\n"))
		if len(want[len(want)-1]) == 0 {
			want = want[:len(want)-1]
		}
		for i, w := range want {
			if i == 0 {
				w = bytes.TrimPrefix(w, bom)
			}
			line, err := l.next()
			if err != nil || !bytes.Equal(line, w) || l.n != i+1 {
				t.Fatalf("line %d of %q: %q (number %d), %v; want %q", i+1, data, line, l.n, err, w)
			}
		}
		if line, err := l.next(); !errors.Is(err, io.EOF) {
			t.Fatalf("after the last line of %q: %q, %v", data, line, err)
		}
	})
}
