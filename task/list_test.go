package task_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/task"
)

func TestList(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	a := e.app("w1")
	var healed atomic.Bool // negative jobs die until then
	q, err := task.Handle(a, "l", func(ctx context.Context, tk *task.Task[job]) (out, error) {
		if tk.Payload.N < 0 && !healed.Load() {
			return out{}, errors.New("negative")
		}
		return out{Double: 2 * tk.Payload.N}, nil
	}, task.MaxRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	e.run(a)

	// Finished one after another, so that their ends of retention are in
	// order; then two dead, one after the other.
	var succeeded, dead []string
	for n := range 3 {
		id, _ := q.Enqueue(ctx, job{N: n})
		if _, err := q.Result(ctx, id); err != nil {
			t.Fatal(err)
		}
		succeeded = append(succeeded, id)
		nextMilli(t, ctx, q, id)
	}
	for n := range 2 {
		id, _ := q.Enqueue(ctx, job{N: -1 - n})
		if _, err := q.Result(ctx, id); !errors.Is(err, task.ErrFailed) {
			t.Fatal(err)
		}
		dead = append(dead, id)
		nextMilli(t, ctx, q, id)
	}
	later, _ := q.Enqueue(ctx, job{N: 7}, task.Delay(2*time.Hour))
	sooner, _ := q.Enqueue(ctx, job{N: 8}, task.Delay(time.Hour))

	ids := func(in []*task.Info) []string {
		var s []string
		for _, i := range in {
			s = append(s, i.ID)
		}
		return s
	}
	for _, c := range []struct {
		which task.Listing
		limit int
		want  []string
		state task.State
	}{
		{task.ListDead, 20, []string{dead[1], dead[0]}, task.Dead},
		{task.ListDead, 1, []string{dead[1]}, task.Dead},
		{task.ListRecent, 20, []string{succeeded[2], succeeded[1], succeeded[0]}, task.Succeeded},
		{task.ListRecent, 2, []string{succeeded[2], succeeded[1]}, task.Succeeded},
		{task.ListScheduled, 100, []string{sooner, later}, task.Scheduled},
	} {
		got, err := q.List(ctx, c.which, c.limit)
		if err != nil {
			t.Fatal(c.which, err)
		}
		if !slices.Equal(ids(got), c.want) {
			t.Errorf("%s limit %d: %v, want %v", c.which, c.limit, ids(got), c.want)
		}
		for _, in := range got {
			if in.State != c.state || in.Queue != "l" || in.EnqueuedAt.IsZero() {
				t.Errorf("%s: %+v", c.which, in)
			}
		}
	}
	got, _ := q.List(ctx, task.ListDead, 1)
	if len(got) != 1 || got[0].Error != "negative" || got[0].Attempts != 1 || got[0].FinishedAt.IsZero() {
		t.Errorf("dead task: %+v", got)
	}

	// Requeued (and now succeeding), a dead task leaves the listing.
	healed.Store(true)
	if err := q.Requeue(ctx, dead[1]); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Result(ctx, dead[1]); err != nil {
		t.Fatal(err)
	}
	got, _ = q.List(ctx, task.ListDead, 20)
	if !slices.Equal(ids(got), []string{dead[0]}) {
		t.Errorf("dead after requeue: %v", ids(got))
	}

	for _, c := range []struct {
		which task.Listing
		limit int
	}{{"done", 10}, {"", 10}, {task.ListDead, 0}, {task.ListDead, -1}, {task.ListDead, task.MaxList + 1}} {
		if _, err := q.List(ctx, c.which, c.limit); !errors.Is(err, task.ErrBadList) {
			t.Errorf("List(%q, %d): %v, want ErrBadList", c.which, c.limit, err)
		}
	}
}

// A listing carries each task's status but not what can be large: no
// payload, result or headers (Info has them), and an error cut to
// ListErrorMax bytes at a UTF-8 boundary.
func TestListLeavesOutPayloadsAndCutsErrors(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	a := e.app("w1")
	long := strings.Repeat("é", task.ListErrorMax) // 2 bytes each: a cut at ListErrorMax+1 bytes splits one
	q, err := task.Handle(a, "big", func(ctx context.Context, tk *task.Task[string]) (string, error) {
		if tk.Payload[0] == 'd' {
			return "", task.SkipRetry(errors.New(long))
		}
		return tk.Payload, nil
	}, task.MaxRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	e.run(a)
	pad := strings.Repeat("x", 64<<10)
	ok, _ := q.Enqueue(ctx, "ok"+pad, task.Headers(map[string]string{"tenant": "acme"}))
	if _, err := q.Result(ctx, ok); err != nil {
		t.Fatal(err)
	}
	nextMilli(t, ctx, q, ok)
	failed, _ := q.Enqueue(ctx, "d"+pad)
	if _, err := q.Result(ctx, failed); !errors.Is(err, task.ErrFailed) {
		t.Fatal(err)
	}
	got, err := q.List(ctx, task.ListRecent, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].ID != failed || got[1].ID != ok {
		t.Fatalf("recent: %+v", got)
	}
	for _, in := range got {
		if in.Payload != nil || in.Result != nil || in.Headers != nil || in.Progress != nil {
			t.Errorf("listed task %s carries payload %d bytes, result %d bytes, headers %v", in.ID, len(in.Payload), len(in.Result), in.Headers)
		}
		if in.EnqueuedAt.IsZero() || in.FinishedAt.IsZero() || in.Attempts != 1 || in.Timeout != task.DefaultTimeout || in.Worker == "" {
			t.Errorf("listed task %s lacks its status: %+v", in.ID, in)
		}
	}
	if got[1].State != task.Succeeded || got[1].Error != "" {
		t.Errorf("succeeded task listed: %+v", got[1])
	}
	full, err := q.Info(ctx, failed)
	if err != nil {
		t.Fatal(err)
	}
	if e := got[0].Error; len(e) > task.ListErrorMax+len("…") || len(e) < task.ListErrorMax-utf8.UTFMax ||
		!strings.HasSuffix(e, "…") || !utf8.ValidString(e) || !strings.HasPrefix(full.Error, strings.TrimSuffix(e, "…")) {
		t.Errorf("listed error: %d bytes, %q...", len(e), e[:min(len(e), 20)])
	}
	if !strings.Contains(full.Error, long) || len(full.Payload) < len(pad) {
		t.Errorf("Info: error %d bytes, payload %d bytes", len(full.Error), len(full.Payload))
	}
}

// nextMilli waits until the millisecond in which task id finished has
// passed, so that the next task's score differs.
func nextMilli[P, R any](t *testing.T, ctx context.Context, q *task.Queue[P, R], id string) {
	t.Helper()
	in, err := q.Info(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	redistest.Eventually(t, time.Second, "the next millisecond", func() bool {
		return time.Now().UnixMilli() > in.FinishedAt.UnixMilli()
	})
}

// The keys a keyed queue parks in its scheduled set while they wait out
// their rate window are not tasks: List leaves them out.
func TestListSkipsParkedKeys(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	a := e.app("w1")
	ran := make(chan string, 10)
	q, err := task.Handle(a, "parked", func(ctx context.Context, tk *task.Task[keyed]) (struct{}, error) {
		ran <- tk.ID
		return struct{}{}, nil
	}, task.Keyed(), task.KeyRate(1, time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	e.run(a)
	first, _ := q.Enqueue(ctx, keyed{Key: "k"}, task.Key("k"))
	second, _ := q.Enqueue(ctx, keyed{Key: "k", Seq: 1}, task.Key("k"))
	later, _ := q.Enqueue(ctx, keyed{Key: "j"}, task.Key("j"), task.Delay(time.Hour))
	if id := <-ran; id != first {
		t.Fatalf("ran %s, want %s", id, first)
	}
	// Key k is parked until its window ends; its second task waits.
	redistest.Eventually(t, 10*time.Second, "key k parked", func() bool {
		ids, _ := e.client.ZRange(ctx, rdb.NewKeySpace(e.prefix, "shop").TaskScheduled("parked"), 0, -1).Result()
		return slices.ContainsFunc(ids, func(id string) bool { return strings.HasPrefix(id, "~k:") })
	})
	got, err := q.List(ctx, task.ListScheduled, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].ID != later {
		t.Errorf("scheduled: %+v, want only %s (not %s, waiting on its key)", got, later, second)
	}
}
