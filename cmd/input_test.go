package cmd

import (
	"bytes"
	"context"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/stream"
)

// payment is a user's record type whose msgpack names differ from its Go
// names and which has no json tags, as in examples/orders.
type payment struct {
	ID         int64   `msgpack:"id"`
	CustomerID string  `msgpack:"customer_id"`
	Amount     float64 `msgpack:"amount"`
	Qty        uint8   `msgpack:"qty"`
}

// declarePayments is the Setup of a program embedding the CLI with stream
// "payments" of payment records, keyed by customer_id.
func declarePayments(cfg app.Config) (*app.App, error) {
	a, err := app.New(cfg)
	if err != nil {
		return nil, err
	}
	if _, err := stream.Declare[payment](a, "payments", stream.KeyField("customer_id")); err != nil {
		a.Close()
		return nil, err
	}
	return a, nil
}

// runCtx is run with a context of the caller's.
func runCtx(ctx context.Context, setup Setup, stdin string, args ...string) result {
	var stdout, stderr bytes.Buffer
	status := Run(ctx, setup, append([]string{"leat"}, args...), strings.NewReader(stdin), &stdout, &stderr)
	return result{status: status, stdout: stdout.String(), stderr: stderr.String()}
}

// The program embedding the CLI with its Go type and the standalone binary
// (registry only) route a JSON line alike and store the same record.
func TestEmbeddedAndStandaloneAgree(t *testing.T) {
	t.Parallel()
	s := newShop(t)
	line := `{"id":7,"customer_id":"c-1","amount":12.5,"qty":3}`
	embedded := run(t, declarePayments, "", s.args("send", "payments", line)...)
	if embedded.status != 0 {
		t.Fatalf("embedded: status %d, stderr %q", embedded.status, embedded.stderr)
	}
	standalone := run(t, nil, "", s.args("send", "payments", line)...)
	if standalone.status != 0 {
		t.Fatalf("standalone: status %d, stderr %q", standalone.status, standalone.stderr)
	}
	p := stream.PartitionOf([]byte("c-1"), stream.DefaultPartitions)
	es := s.entries(t, "payments", p)
	if len(es) != 2 || s.total(t, "payments", stream.DefaultPartitions) != 2 {
		t.Fatalf("partition %d holds %d entries, want both sends", p, len(es))
	}
	want := payment{ID: 7, CustomerID: "c-1", Amount: 12.5, Qty: 3}
	var asMaps []map[string]any
	for _, e := range es {
		if string(e.Key) != "c-1" {
			t.Errorf("entry %s has key %q, want c-1", e.ID, e.Key)
		}
		var got payment
		if err := stream.MsgPack.Unmarshal(e.Data, &got); err != nil || got != want {
			t.Errorf("entry %s decodes to %+v, %v; want %+v", e.ID, got, err, want)
		}
		var m map[string]any
		if err := stream.MsgPack.Unmarshal(e.Data, &m); err != nil {
			t.Fatal(err)
		}
		asMaps = append(asMaps, m)
	}
	if !reflect.DeepEqual(asMaps[0], asMaps[1]) {
		t.Errorf("stored records differ: embedded %v, standalone %v", asMaps[0], asMaps[1])
	}
}

// Records the stream's type cannot hold are refused by the program embedding
// the CLI, naming the line and the field, and nothing is sent.
func TestEmbeddedRefusesWhatTheTypeCannotHold(t *testing.T) {
	t.Parallel()
	good := `{"id":1,"customer_id":"c-1","amount":1}` + "\n"
	for _, tc := range []struct {
		name, line string
		want       []string
	}{
		{"misspelled field", `{"id":2,"customer":"c-1"}`, []string{`line 3: key field "customer_id" is missing`}},
		{"unknown field", `{"id":2,"customer_id":"c-1","custmer_id":"c-2"}`, []string{`line 3: field "custmer_id": unknown field; did you mean "customer_id"?`}},
		{"fraction in an integer", `{"id":2.5,"customer_id":"c-1"}`, []string{`line 3: field "id": 2.5 is not an integer`}},
		{"beyond int64", `{"id":9223372036854775808,"customer_id":"c-1"}`, []string{`line 3: field "id": 9223372036854775808 is out of range`}},
		{"out of range", `{"id":2,"customer_id":"c-1","qty":256}`, []string{`line 3: field "qty": 256 is out of range (0 to 255)`}},
		{"number for a string", `{"id":2,"customer_id":5}`, []string{`line 3: field "customer_id": want a string, got a number`}},
		{"invalid UTF-8", "{\"id\":2,\"customer_id\":\"c-\xc3\x28\"}", []string{`line 3: invalid UTF-8 at byte 26`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newShop(t)
			path := writeTemp(t, good+good+tc.line+"\n"+good)
			r := run(t, declarePayments, "", s.args("sendmany", "payments", path)...)
			if r.status != exitUsage || strings.Count(r.stderr, "\n") != 1 {
				t.Errorf("status %d, stderr %q; want %d and one line", r.status, r.stderr, exitUsage)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr %q does not mention %q", r.stderr, w)
				}
			}
			for _, goName := range []string{"int64", "uint8", "float64", "interface", "map[", "cmd.payment"} {
				if strings.Contains(r.stderr, goName) {
					t.Errorf("stderr %q names Go type %q", r.stderr, goName)
				}
			}
			if n := s.total(t, "payments", stream.DefaultPartitions); n != 0 {
				t.Errorf("%d entries sent, want none", n)
			}
			// send refuses the same record.
			r = run(t, declarePayments, "", s.args("send", "payments", tc.line)...)
			wantFailure(t, r, exitUsage, "record: ")
		})
	}
}

// The standalone binary carries integers exactly and refuses those beyond 64
// bits with the line number; it refuses invalid UTF-8.
func TestSendManyExactIntegersAndUTF8(t *testing.T) {
	t.Parallel()
	s := newShop(t)
	path := writeTemp(t, `{"k":"a","n":18446744073709551615,"m":-9223372036854775808}`+"\n")
	r := run(t, nil, "", s.args("sendmany", "--key", "k", "orders", path)...)
	if r.status != 0 {
		t.Fatalf("status %d, stderr %q", r.status, r.stderr)
	}
	e := s.entries(t, "orders", stream.PartitionOf([]byte("a"), stream.DefaultPartitions))[0]
	var got struct {
		N uint64 `msgpack:"n"`
		M int64  `msgpack:"m"`
	}
	if err := stream.MsgPack.Unmarshal(e.Data, &got); err != nil || got.N != 18446744073709551615 || got.M != -9223372036854775808 {
		t.Fatalf("stored %+v, %v", got, err)
	}
	for _, tc := range []struct{ line, want string }{
		{`{"k":"a","n":18446744073709551616}`, `line 2: field "n": integer 18446744073709551616 does not fit in 64 bits`},
		{`{"k":"a","n":-9223372036854775809}`, `line 2: field "n": integer -9223372036854775809 does not fit in 64 bits`},
		{"{\"k\":\"a\",\"s\":\"\xff\"}", `line 2: invalid UTF-8 at byte 15`},
		{`{"k":"a","s":"\udc00"}`, `line 2: invalid JSON string: \udc00 is half of a UTF-16 surrogate pair`},
		{`{"k":"a","s":1,"s":2}`, `line 2: field "s" appears twice in its object`},
	} {
		path := writeTemp(t, `{"k":"b"}`+"\n"+tc.line+"\n")
		r := run(t, nil, "", s.args("sendmany", "--key", "k", "orders", path)...)
		if r.status != exitUsage || r.stderr != tc.want+"\n" && !strings.HasPrefix(r.stderr, tc.want) {
			t.Errorf("%s: status %d, stderr %q; want %q", tc.line, r.status, r.stderr, tc.want)
		}
	}
	if n := s.total(t, "orders", stream.DefaultPartitions); n != 1 {
		t.Errorf("%d entries, want 1", n)
	}
}

// A UTF-8 byte-order mark at the start of the input is skipped.
func TestSendManyByteOrderMark(t *testing.T) {
	t.Parallel()
	s := newShop(t)
	path := writeTemp(t, "\xef\xbb\xbf"+jsonLines(0, 3))
	if r := run(t, nil, "", s.args("sendmany", "--key", "customer", "orders", path)...); r.status != 0 {
		t.Fatalf("file: status %d, stderr %q", r.status, r.stderr)
	}
	if r := run(t, nil, "\xef\xbb\xbf"+jsonLines(3, 5), s.args("sendmany", "--key", "customer", "orders", "-")...); r.status != 0 {
		t.Fatalf("stdin: status %d, stderr %q", r.status, r.stderr)
	}
	if n := s.total(t, "orders", stream.DefaultPartitions); n != 5 {
		t.Errorf("%d entries, want 5", n)
	}
	// Elsewhere it is bad input.
	path = writeTemp(t, jsonLines(0, 1)+"\xef\xbb\xbf"+jsonLines(1, 2))
	r := run(t, nil, "", s.args("sendmany", "--key", "customer", "orders", path)...)
	if r.status != exitUsage || !strings.HasPrefix(r.stderr, "line 2: invalid JSON") {
		t.Errorf("mark on line 2: status %d, stderr %q", r.status, r.stderr)
	}
}

// Large inputs are sent in a second pass that reads them again, from the
// file or from the copy of standard input, in the order of the lines.
func TestSendManySecondPass(t *testing.T) {
	t.Parallel()
	for _, fromStdin := range []bool{false, true} {
		s := newShop(t)
		ctx := context.WithValue(context.Background(), keepLimitKey{}, 100)
		ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		content := jsonLines(0, 25_000)
		var r result
		if fromStdin {
			r = runCtx(ctx, nil, content, s.args("sendmany", "--key", "customer", "orders", "-")...)
		} else {
			r = runCtx(ctx, nil, "", s.args("sendmany", "--key", "customer", "orders", writeTemp(t, content))...)
		}
		if m := summary.FindStringSubmatch(r.stdout); r.status != 0 || m == nil || m[1] != "25000" {
			t.Fatalf("stdin %v: status %d, stdout %q, stderr %q", fromStdin, r.status, r.stdout, r.stderr)
		}
		for p := range stream.DefaultPartitions {
			last := map[string]int64{}
			for _, e := range s.entries(t, "orders", p) {
				var rec line
				if err := stream.MsgPack.Unmarshal(e.Data, &rec); err != nil {
					t.Fatal(err)
				}
				if prev, ok := last[rec.Customer]; ok && rec.N <= prev {
					t.Fatalf("customer %s: record %d after %d", rec.Customer, rec.N, prev)
				}
				last[rec.Customer] = rec.N
			}
		}
		if n := s.total(t, "orders", stream.DefaultPartitions); n != 25_000 {
			t.Errorf("stdin %v: %d entries, want 25000", fromStdin, n)
		}
	}
}

// An interrupted sendmany says once how many records it sent.
func TestSendManyInterrupted(t *testing.T) {
	t.Parallel()
	s := newShop(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ctx = context.WithValue(ctx, chunkSentKey{}, func(int) { cancel() })
	r := runCtx(ctx, nil, "", s.args("sendmany", "--key", "customer", "orders", writeTemp(t, jsonLines(0, 3*sendChunk)))...)
	wantFailure(t, r, exitFailure, "interrupted: sent 10000 of 30000 events to orders; the other 20000 were not sent")
	if strings.Count(r.stderr, "sent") != 2 || strings.Contains(r.stderr, "context canceled") {
		t.Errorf("stderr %q", r.stderr)
	}
	if n := s.total(t, "orders", stream.DefaultPartitions); n != sendChunk {
		t.Errorf("%d entries, want %d", n, sendChunk)
	}
}

// Slips on the command line get words that say what to do.
func TestCommandLineSlips(t *testing.T) {
	t.Parallel()
	s := newShop(t)
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"global flag after the command", []string{"send", "--redis", "redis://x", "orders", "{}"},
			[]string{"send: --redis is a global flag: put it before the command, as in leat --redis VALUE send"}},
		{"global flag with = after the command", []string{"sendmany", "--app=shop", "orders", "-"},
			[]string{"--app is a global flag"}},
		{"global flag after the arguments", s.args("send", "--key", "k", "orders", `{"k":1}`, "--prefix", "p"),
			[]string{"--prefix is a global flag"}},
		{"directory", s.args("sendmany", "--key", "k", "orders", dir), []string{dir + " is a directory"}},
		{"help of an unknown command", []string{"help", "nope"}, []string{`help: unknown command "nope"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			wantFailure(t, run(t, nil, "", tc.args...), exitUsage, tc.want...)
		})
	}
	for _, args := range [][]string{{"help"}, {"help", "sendmany"}} {
		r := run(t, nil, "", args...)
		if r.status != 0 || r.stderr != "" || !strings.Contains(r.stdout, "USAGE:") {
			t.Errorf("%q: status %d, stdout %q, stderr %q", args, r.status, r.stdout, r.stderr)
		}
	}
	r := run(t, nil, "", "--version")
	if r.status != 0 || r.stderr != "" || !regexp.MustCompile(`^leat \S+`).MatchString(r.stdout) {
		t.Errorf("--version: status %d, stdout %q, stderr %q", r.status, r.stdout, r.stderr)
	}
}

// The progress bar never grows wider than the terminal: each redraw of a
// line wider than the terminal would wrap and leave a new line behind.
func TestProgressFitsNarrowTerminals(t *testing.T) {
	t.Parallel()
	ansi := regexp.MustCompile("\x1b\\[[0-9;]*[A-Za-z]")
	for _, unit := range []string{unitEvents, unitBytes} {
		for _, total := range []int64{1_000_000, -1} {
			if unit == unitEvents && total < 0 {
				continue
			}
			for cols := 1; cols <= 120; cols++ {
				var buf bytes.Buffer
				p := newProgressWidth(&buf, cols, total, "checking /some/long/path/records.jsonl", unit)
				for range 5 {
					p.add(123_457)
					time.Sleep(0) // the bar throttles on time; render the first and last
				}
				p.clear()
				for _, l := range strings.FieldsFunc(ansi.ReplaceAllString(buf.String(), ""), func(r rune) bool { return r == '\r' || r == '\n' }) {
					if w := len([]rune(l)); w >= cols {
						t.Fatalf("%s, total %d, %d columns: line of %d columns: %q", unit, total, cols, w, l)
					}
				}
			}
		}
	}
}
