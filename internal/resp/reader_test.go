package resp_test

import (
	"testing"

	"github.com/leatdev/leat/internal/resp"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// A reply of every kind is read value by value, strings as offsets into
// it; RESP3 maps count two elements per entry, nulls read as such, and an
// error reply comes out as an error.
func TestReader(t *testing.T) {
	reply := []byte("*5\r\n:42\r\n$5\r\nhello\r\n$-1\r\n%1\r\n+k\r\n*2\r\n:1\r\n_\r\n+OK\r\n")
	r := resp.NewReader(reply)
	if n, err := r.Aggregate(); n != 5 || err != nil {
		t.Fatalf("array: %d %v", n, err)
	}
	if v, err := r.Integer(); v != 42 || err != nil {
		t.Fatalf("integer: %d %v", v, err)
	}
	if from, to, null, err := r.Bulk(); string(reply[from:to]) != "hello" || null || err != nil {
		t.Fatalf("bulk: %q %v %v", reply[from:to], null, err)
	}
	if _, _, null, err := r.Bulk(); !null || err != nil {
		t.Fatalf("null bulk: %v %v", null, err)
	}
	if r.Peek() != '%' {
		t.Fatalf("peek %q, want a map", r.Peek())
	}
	if n, err := r.Aggregate(); n != 2 || err != nil {
		t.Fatalf("map: %d %v", n, err)
	}
	if s, err := r.Text(); s != "k" || err != nil {
		t.Fatalf("simple string: %q %v", s, err)
	}
	if err := r.Skip(); err != nil { // the array [1, null]
		t.Fatal(err)
	}
	if s, err := r.Text(); s != "OK" || err != nil || r.Left() != 0 {
		t.Fatalf("last: %q %v, %d left", s, err, r.Left())
	}
	e := resp.NewReader([]byte("-NOSCRIPT No matching script\r\n"))
	if _, err := e.Aggregate(); err == nil || err.Error() != "NOSCRIPT No matching script" {
		t.Fatalf("error reply: %v", err)
	}
	for in, want := range map[string]int64{":-7\r\n": -7, ":0\r\n": 0, ":9223372036854775807\r\n": 9223372036854775807, ":-9223372036854775808\r\n": -9223372036854775808} {
		r := resp.NewReader([]byte(in))
		if v, err := r.Integer(); v != want || err != nil {
			t.Errorf("%q: %d %v, want %d", in, v, err, want)
		}
	}
	short := resp.NewReader([]byte("$10\r\nabc"))
	if _, _, _, err := short.Bulk(); err == nil {
		t.Fatal("a cut reply read without error")
	}
}

// FuzzReader: whatever the bytes, reading them value by value ends without
// a panic, each step moving forward or failing, and no length a reply
// claims can make the reader or its caller allocate beyond the reply's
// size.
func FuzzReader(f *testing.F) {
	for _, s := range []string{
		"*5\r\n:42\r\n$5\r\nhello\r\n$-1\r\n%1\r\n+k\r\n*2\r\n:1\r\n_\r\n+OK\r\n",
		"$9223372036854775807\r\nx\r\n",
		"*999999999999999999\r\n",
		"$3\r\nab",
		"-ERR nope\r\n",
		":-9223372036854775808\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r := resp.NewReader(b)
		for r.Left() > 0 {
			before := r.Left()
			if r.Peek() == '*' || r.Peek() == '%' || r.Peek() == '~' {
				n, err := r.Aggregate()
				if err != nil {
					return
				}
				if n > r.Left()/3 {
					t.Fatalf("an aggregate of %d elements in the %d bytes after its header", n, r.Left())
				}
				continue
			}
			if from, to, null, err := r.Bulk(); err == nil && !null && (from < 0 || to < from || to > len(b)) {
				t.Fatalf("a string at %d:%d of %d bytes", from, to, len(b))
			} else if err != nil {
				return
			}
			if r.Left() >= before {
				t.Fatalf("no progress at %d bytes left", before)
			}
		}
		r = resp.NewReader(b)
		for r.Left() > 0 && r.Skip() == nil {
		}
	})
}

// Number reads an integer reply or a string holding a decimal integer, and
// refuses anything else.
func TestReaderNumber(t *testing.T) {
	for in, want := range map[string]int64{":42\r\n": 42, "$2\r\n42\r\n": 42, "+-7\r\n": -7, "$19\r\n9223372036854775807\r\n": 9223372036854775807, "$1\r\n0\r\n": 0} {
		r := resp.NewReader([]byte(in))
		if v, err := r.Number(); v != want || err != nil {
			t.Errorf("%q: %d %v, want %d", in, v, err, want)
		}
	}
	for _, in := range []string{"$2\r\n4x\r\n", "$0\r\n\r\n", "$-1\r\n", "_\r\n", "*1\r\n:1\r\n", "-ERR no\r\n", "$20\r\n92233720368547758070\r\n"} {
		r := resp.NewReader([]byte(in))
		if v, err := r.Number(); err == nil {
			t.Errorf("%q read as %d", in, v)
		}
	}
}
