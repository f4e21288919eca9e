package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/leatdev/leat/internal/tools/bench"
	"github.com/redis/go-redis/v9"
)

func TestPerTask(t *testing.T) {
	for _, tc := range []struct {
		base, after int64
		n           int
		want        float64
	}{
		{1_000_000, 1_000_000 + 20_000*250, 20_000, 250},
		{500, 2000, 3, 500},
		{2000, 1000, 10, -100}, // the server gave memory back: shown, not hidden
		{0, 700, 0, 700},       // no tasks: no division by zero
	} {
		if got := perTask(tc.base, tc.after, tc.n); got != tc.want {
			t.Errorf("perTask(%d, %d, %d) = %v, want %v", tc.base, tc.after, tc.n, got, tc.want)
		}
	}
}

func TestJSONPayload(t *testing.T) {
	for _, n := range append([]int{11, 12}, memoryPayloads...) {
		b, err := json.Marshal(jsonPayload(n))
		if err != nil {
			t.Fatal(err)
		}
		if len(b) != n {
			t.Errorf("jsonPayload(%d) encodes to %d bytes: %s", n, len(b), b)
		}
	}
}

func TestWriteMemoryTable(t *testing.T) {
	var rows []memRow
	for _, p := range memoryPayloads {
		f := float64(p)
		rows = append(rows,
			memRow{payload: p, variant: "leat", pending: f + 100, retained: f + 300},
			memRow{payload: p, variant: "asynq", pending: f + 200, retained: f + 1000},
			memRow{payload: p, variant: "bullmq", pending: f + 400, retained: f + 500})
	}
	var out bytes.Buffer
	if err := writeMemoryTable(&out, 20_000, rows); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(out.String(), "\n")
	find := func(p int, variant string) []string {
		for _, l := range lines {
			if f := strings.Fields(l); len(f) > 2 && f[0] == fmt.Sprint(p) && strings.HasPrefix(l, fmt.Sprintf("%-12s", fmt.Sprint(p))+variant) {
				return f[1:]
			}
		}
		t.Fatalf("no line of %s at %d bytes:\n%s", variant, p, out.String())
		return nil
	}
	if !strings.HasPrefix(out.String(), "memory: Redis used_memory per task, 20000 tasks") {
		t.Errorf("title:\n%s", out.String())
	}
	// Pending: asynq (p+200) is the better peer; retained: BullMQ (p+500).
	for _, p := range memoryPayloads {
		f := float64(p)
		if got, want := find(p, "bullmq"), []string{"bullmq", bench.FormatFigure(f + 400), bench.FormatFigure(f + 500)}; strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("%d bytes, bullmq: %q, want %q", p, got, want)
		}
		got := strings.Join(find(p, "leat/better peer"), " ")
		want := fmt.Sprintf("leat/better peer %.2f (asynq) %.2f (bullmq)", (f+100)/(f+200), (f+300)/(f+500))
		if got != want {
			t.Errorf("%d bytes: %q, want %q", p, got, want)
		}
	}
}

// TestMeasureMemory checks the measurement against a variant whose cost is
// known: n strings of the payload's size, then n more beside them.
func TestMeasureMemory(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server is not in PATH")
	}
	ctx := context.Background()
	srv, err := bench.StartServer(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	opt, err := redis.ParseURL(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	client := redis.NewClient(opt)
	defer client.Close()
	set := func(ctx context.Context, from, n, payload int) error {
		pipe := client.Pipeline()
		for i := range n {
			pipe.Set(ctx, fmt.Sprintf("k:%d", from+i), strings.Repeat("x", payload), 0)
		}
		_, err := pipe.Exec(ctx)
		return err
	}
	var size int
	strs := memVariant{
		name: "strings",
		fill: func(ctx context.Context, n, payload int) error { size = payload; return set(ctx, 0, n, payload) },
		work: func(ctx context.Context, n int) error { return set(ctx, n, n, size) },
	}
	const n = 2000
	rows, err := measureMemory(ctx, client, n, []memVariant{strs})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(memoryPayloads) {
		t.Fatalf("%d rows, want %d: %+v", len(rows), len(memoryPayloads), rows)
	}
	for i, r := range rows {
		p := float64(memoryPayloads[i])
		// A string key costs its value, its key and some tens of bytes of
		// overhead; twice as many keys, about twice as much.
		if r.payload != memoryPayloads[i] || r.pending < p || r.pending > p+200 || r.retained < 2*p || r.retained > 2*(p+200) {
			t.Errorf("row %+v: want pending in [%v, %v], retained about twice", r, p, p+200)
		}
	}
	if empty, err := serverEmpty(ctx, client); err != nil || !empty {
		t.Errorf("server not emptied at the end: %v, %v", empty, err)
	}
}
