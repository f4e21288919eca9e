package cmd

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/leatdev/leat/stream"
)

// jsonLines returns the records {"customer":"cK","n":I} for I in [from, to),
// one per line, over 97 customers.
func jsonLines(from, to int) string {
	var b strings.Builder
	for i := from; i < to; i++ {
		fmt.Fprintf(&b, `{"customer":"c%d","n":%d}`+"\n", i%97, i)
	}
	return b.String()
}

// line is a record of jsonLines.
type line struct {
	Customer string `json:"customer"`
	N        int64  `json:"n"`
}

// writeTemp writes content to a new file and returns its path.
func writeTemp(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "records.jsonl")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

var summary = regexp.MustCompile(`^sent ([0-9]+) events? to orders in [0-9]+\.[0-9]{2}s \([0-9]+ events/s\), checked in [0-9]+\.[0-9]{2}s\n$`)

func TestSendMany(t *testing.T) {
	t.Parallel()
	s := newShop(t)
	// Blank lines, also with spaces, are skipped.
	path := writeTemp(t, "\n"+jsonLines(0, 500)+"  \n"+jsonLines(500, 1000))
	r := run(t, nil, "", s.args("sendmany", "--key", "customer", "--header", "source=test", "orders", path)...)
	if r.status != 0 || r.stderr != "" {
		t.Fatalf("status %d, stderr %q", r.status, r.stderr)
	}
	if m := summary.FindStringSubmatch(r.stdout); m == nil || m[1] != "1000" {
		t.Errorf("stdout %q, want a summary of 1000 events", r.stdout)
	}
	var total int
	for p := range stream.DefaultPartitions {
		es := s.entries(t, "orders", p)
		total += len(es)
		last := map[string]int64{} // records of one customer keep their order
		for _, e := range es {
			if got := stream.PartitionOf(e.Key, stream.DefaultPartitions); got != p {
				t.Fatalf("key %s is on partition %d, belongs on %d", e.Key, p, got)
			}
			if e.Headers["source"] != "test" {
				t.Fatalf("entry %s has headers %v", e.ID, e.Headers)
			}
			var rec line
			if err := stream.MsgPack.Unmarshal(e.Data, &rec); err != nil {
				t.Fatal(err)
			}
			if rec.Customer != string(e.Key) {
				t.Fatalf("entry %s: key %s, record %+v", e.ID, e.Key, rec)
			}
			if prev, ok := last[rec.Customer]; ok && rec.N <= prev {
				t.Fatalf("customer %s: record %d after %d", rec.Customer, rec.N, prev)
			}
			last[rec.Customer] = rec.N
		}
	}
	if total != 1000 {
		t.Errorf("%d entries over the partitions, want 1000", total)
	}
}

func TestSendManyStdin(t *testing.T) {
	t.Parallel()
	s := newShop(t)
	r := run(t, nil, jsonLines(0, 10), s.args("sendmany", "--partitions", "4", "--key", "customer", "orders", "-")...)
	if r.status != 0 || !summary.MatchString(r.stdout) {
		t.Fatalf("status %d, stdout %q, stderr %q", r.status, r.stdout, r.stderr)
	}
	if n := s.total(t, "orders", 4); n != 10 {
		t.Errorf("%d entries, want 10", n)
	}
}

// TestSendManyAcceptance sends 100,000 records to a 16-partition stream.
func TestSendManyAcceptance(t *testing.T) {
	t.Parallel()
	s := newShop(t)
	path := writeTemp(t, jsonLines(0, 100_000))
	r := run(t, nil, "", s.args("sendmany", "--partitions", "16", "--key", "customer", "orders", path)...)
	if m := summary.FindStringSubmatch(r.stdout); r.status != 0 || m == nil || m[1] != "100000" {
		t.Fatalf("status %d, stdout %q, stderr %q", r.status, r.stdout, r.stderr)
	}
	if n := s.total(t, "orders", 16); n != 100_000 {
		t.Errorf("%d entries over the partitions, want 100000", n)
	}
}

func TestSendManyBadLine(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, line, reason string
	}{
		{"invalid JSON", `{"customer":"c7",`, "invalid JSON"},
		{"missing key", `{"n":7}`, `key field "customer" is missing`},
		{"not an object", `[1,2]`, "want a JSON object, got an array"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newShop(t)
			// Line 3 is blank and still counts.
			lines := strings.SplitAfter(jsonLines(0, 9), "\n")
			lines[2] = "\n"
			lines[6] = tc.line + "\n"
			path := writeTemp(t, strings.Join(lines, ""))
			r := run(t, nil, "", s.args("sendmany", "--key", "customer", "orders", path)...)
			if r.status != exitUsage {
				t.Errorf("exit status %d, want %d", r.status, exitUsage)
			}
			if !strings.HasPrefix(r.stderr, "line 7: ") || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, tc.reason) {
				t.Errorf("stderr %q, want one line \"line 7: ...%s...\"", r.stderr, tc.reason)
			}
			if r.stdout != "" {
				t.Errorf("stdout %q, want nothing", r.stdout)
			}
			if n := s.total(t, "orders", stream.DefaultPartitions); n != 0 {
				t.Errorf("%d entries sent, want none", n)
			}
		})
	}
}
