package cmd

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/leatdev/leat/internal/core"
	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/redis/go-redis/v9"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// result is what one in-process run of the CLI did.
type result struct {
	status         int
	stdout, stderr string
}

// run runs the CLI with args (without the program name) and stdin.
func run(t *testing.T, setup Setup, stdin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	status := Run(ctx, setup, append([]string{"leat"}, args...), strings.NewReader(stdin), &stdout, &stderr)
	return result{status: status, stdout: stdout.String(), stderr: stderr.String()}
}

// shop is app "shop" on the shared test server under a fresh key prefix.
type shop struct {
	client *redis.Client
	keys   rdb.KeySpace
	global []string // global flags selecting the app
}

func newShop(t *testing.T) shop {
	c, prefix := redistest.Client(t)
	return shop{
		client: c,
		keys:   rdb.NewKeySpace(prefix, "shop"),
		global: []string{"--redis", redistest.URL(t), "--prefix", prefix, "--app", "shop"},
	}
}

// quiet is args with the logs turned off, for commands whose stderr a test
// checks while the runtime logs (a worker).
func (s shop) quiet(args ...string) []string {
	return s.args(append([]string{"--log-level", "error+4"}, args...)...)
}

// args returns the global flags followed by args.
func (s shop) args(args ...string) []string { return append(append([]string{}, s.global...), args...) }

// xlen returns the length of partition p of stream.
func (s shop) xlen(t *testing.T, name string, p int) int64 {
	t.Helper()
	n, err := s.client.XLen(context.Background(), s.keys.Partition(name, p)).Result()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// total returns the summed length of the first partitions of stream.
func (s shop) total(t *testing.T, name string, partitions int) int64 {
	t.Helper()
	var sum int64
	for p := range partitions {
		sum += s.xlen(t, name, p)
	}
	return sum
}

// entries returns the parsed entries of partition p of stream.
func (s shop) entries(t *testing.T, name string, p int) []core.Entry {
	t.Helper()
	msgs, err := s.client.XRange(context.Background(), s.keys.Partition(name, p), "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	def, err := core.LoadDefinition(context.Background(), s.client, s.keys.Registry(), name)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]core.Entry, 0, len(msgs))
	for _, m := range msgs {
		e, err := core.ParseEntry(m.ID, p, def.EntryCodec, m.Values)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

// wantFailure checks that r failed with status and exactly one line on
// stderr starting with "leat: " and containing every part of want.
func wantFailure(t *testing.T, r result, status int, want ...string) {
	t.Helper()
	if r.status != status {
		t.Errorf("exit status %d, want %d (stderr %q)", r.status, status, r.stderr)
	}
	if !strings.HasPrefix(r.stderr, "leat: ") || strings.Count(r.stderr, "\n") != 1 || !strings.HasSuffix(r.stderr, "\n") {
		t.Errorf("stderr %q, want one line starting with %q", r.stderr, "leat: ")
	}
	for _, w := range want {
		if !strings.Contains(r.stderr, w) {
			t.Errorf("stderr %q does not mention %q", r.stderr, w)
		}
	}
}
