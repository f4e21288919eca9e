package task_test

import (
	"context"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/redistest"
	"github.com/leatdev/leat/task"
)

// An idle queue costs each of its workers one blocking read per 5 seconds
// (idleBlock), and no fetch script beside it: after a blocking read that
// found nothing, the next one goes out at once (an entry added meanwhile is
// returned by it at once). A task enqueued then runs at once, and a stop
// interrupts the read (CLIENT UNBLOCK) rather than wait for its end.
func TestIdleQueueCost(t *testing.T) {
	e := newEnv(t)
	a := e.app("w1")
	q, err := task.Handle(a, "idle", func(ctx context.Context, tk *task.Task[int]) (int, error) { return tk.Payload, nil })
	if err != nil {
		t.Fatal(err)
	}
	stopWorker := e.run(a)
	ctx := ctxT(t)
	id, err := q.Enqueue(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.Result(ctx, id); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // idle: the fetchers' first blocking reads found nothing

	var mu sync.Mutex
	reads, fetches := 0, 0 // blocking reads, and fetch scripts taking ready tasks
	u, err := url.Parse(redistest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	stop := redistest.Monitor(t, u.Host, func(line string) {
		if !strings.Contains(line, e.prefix+":") || strings.Contains(line, " lua]") {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		switch {
		case strings.Contains(line, `"xreadgroup"`) && strings.Contains(line, `"block"`):
			reads++
		case strings.Contains(line, `"evalsha"`) && strings.Contains(line, `"read"`):
			fetches++
		}
	})
	time.Sleep(2500 * time.Millisecond)
	stop()
	mu.Lock()
	r, f := reads, fetches
	mu.Unlock()
	if r > 2 || f > 0 {
		t.Errorf("idle for 2.5s: %d blocking reads and %d fetch scripts, want a read per fetcher at most (5s each) and no script", r, f)
	}
	t.Logf("idle for 2.5s: %d blocking reads, %d fetch scripts", r, f)

	id, err = q.Enqueue(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := q.Result(ctx, id); err != nil || res != 2 {
		t.Fatalf("a task enqueued while idle: %v %v", res, err)
	}
	time.Sleep(200 * time.Millisecond) // the fetchers block again
	stopped := make(chan error, 1)
	go func() { stopped <- stopWorker() }()
	select {
	case err := <-stopped:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("the worker did not stop within 2s: its blocking reads (5s) were not interrupted")
	}
}

// A Redis user that may not run CLIENT UNBLOCK (the common +@all
// -@dangerous) still runs the queues' tasks: their idle fetchers block 500ms
// at a time, so a stop still returns soon, and one warning, however many
// queues, says what to grant.
func TestIdleQueueWithoutClientUnblock(t *testing.T) {
	t.Parallel()
	prefix := redistest.Prefix(t)
	url := redistest.User(t, "+@all", "-@dangerous", "~"+prefix+":*", "&*")
	var logs redistest.Log
	a, err := app.New(app.Config{Name: "shop", RedisURL: url, KeyPrefix: prefix, WorkerID: "w1",
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	q, err := task.Handle(a, "idle", func(ctx context.Context, tk *task.Task[int]) (int, error) { return tk.Payload, nil })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := task.Handle(a, "other", func(ctx context.Context, tk *task.Task[int]) (int, error) { return 0, nil }); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- a.Run(ctx) }()
	defer cancel()
	for n := range 2 {
		id, err := q.Enqueue(ctxT(t), n)
		if err != nil {
			t.Fatal(err)
		}
		if res, err := q.Result(ctxT(t), id); err != nil || res != n {
			t.Fatalf("task %d: %v %v", n, res, err)
		}
		time.Sleep(time.Second) // idle: the fetchers block
	}
	cancel()
	select {
	case err := <-stopped:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("the worker did not stop within 2s")
	}
	if n := strings.Count(logs.String(), "may not run a command that interrupts blocking reads"); n != 1 ||
		!strings.Contains(logs.String(), `command="CLIENT UNBLOCK"`) || !strings.Contains(logs.String(), "grant=+client|unblock") {
		t.Errorf("%d warnings about CLIENT UNBLOCK, want 1: %s", n, logs.String())
	}
}
