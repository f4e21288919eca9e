// Command tasks is leat's task queue in one file: it declares a queue of
// thumbnails to render with a handler that fails now and then, runs a
// worker, enqueues a few tasks (one delayed, one unique twice, one that
// never succeeds), waits for their results and prints the counts per
// state.
//
//	go run ./examples/tasks
//
// It needs a real Redis: LEAT_REDIS_URL, else 127.0.0.1:6379. It deletes
// nothing: the queue stays declared, so leat tasks, leat serve and a
// second run (whose worker also runs tasks enqueued meanwhile) find it.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/task"
	"github.com/redis/go-redis/v9"
)

// Thumbnail is a task's payload.
type Thumbnail struct {
	Image string `json:"image"`
	Width int    `json:"width"`
}

// Rendered is a task's result.
type Rendered struct {
	URL string `json:"url"`
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	url := os.Getenv("LEAT_REDIS_URL")
	if url == "" {
		url = "redis://127.0.0.1:6379"
	}
	opt, err := redis.ParseURL(url)
	if err != nil {
		fmt.Fprintln(os.Stderr, "tasks: LEAT_REDIS_URL:", err)
		os.Exit(1)
	}
	c := redis.NewClient(opt)
	defer c.Close()
	if err := run(ctx, os.Stdout, c); err != nil {
		fmt.Fprintln(os.Stderr, "tasks:", err)
		os.Exit(1)
	}
}

// errCorrupt is the permanent failure of the image "broken.png".
var errCorrupt = errors.New("corrupt image")

// run runs the example on client, writing what happens to out.
func run(ctx context.Context, out io.Writer, client redis.UniversalClient) error {
	a, err := app.New(app.Config{Name: "images", Client: client,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return err
	}
	if err := a.Ping(ctx); err != nil {
		return err
	}

	// The handler runs on every worker of the app, 4 tasks at a time per
	// worker. A failed attempt is retried after 50ms, 100ms, ... (jittered).
	thumbs, err := task.Handle(a, "thumbnails", func(ctx context.Context, t *task.Task[Thumbnail]) (Rendered, error) {
		switch {
		case t.Payload.Image == "broken.png":
			return Rendered{}, task.SkipRetry(errCorrupt) // no point retrying
		case t.Payload.Image == "flaky.png" && t.Attempt < 3:
			return Rendered{}, errors.New("storage timeout") // retried
		}
		return Rendered{URL: fmt.Sprintf("https://cdn.example.com/%d/%s", t.Payload.Width, t.Payload.Image)}, nil
	}, task.Concurrency(4), task.MaxRetries(5), task.Backoff(50*time.Millisecond, time.Second))
	if err != nil {
		return err
	}

	wctx, stopWorker := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- a.Run(wctx) }()
	defer func() { stopWorker(); <-done }()

	ids, err := thumbs.EnqueueMany(ctx, []Thumbnail{{"cat.png", 200}, {"flaky.png", 200}, {"broken.png", 200}})
	if err != nil {
		return err
	}
	later, err := thumbs.Enqueue(ctx, Thumbnail{"dog.png", 400}, task.Delay(300*time.Millisecond))
	if err != nil {
		return err
	}
	ids = append(ids, later)
	first, _ := thumbs.Enqueue(ctx, Thumbnail{"owl.png", 100}, task.Unique(time.Minute))
	again, err := thumbs.Enqueue(ctx, Thumbnail{"owl.png", 100}, task.Unique(time.Minute))
	fmt.Fprintf(out, "owl.png enqueued twice: same task %t, duplicate %t\n", first == again, errors.Is(err, task.ErrDuplicate))
	ids = append(ids, first)

	wait, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	counts := map[task.State]int{} // of this run's tasks: the queue's own counts keep earlier runs'
	for _, id := range ids {
		in, err := thumbs.Wait(wait, id)
		if err != nil {
			return err
		}
		counts[in.State]++
		var p Thumbnail
		_ = jsonUnmarshal(in.Payload, &p)
		switch in.State {
		case task.Succeeded:
			fmt.Fprintf(out, "%-10s %s after %d attempt(s): %s\n", p.Image, in.State, in.Attempts, in.Result)
		default:
			fmt.Fprintf(out, "%-10s %s after %d attempt(s): %s\n", p.Image, in.State, in.Attempts, in.Error)
		}
	}
	fmt.Fprintf(out, "counts: %d succeeded, %d failed\n", counts[task.Succeeded], counts[task.Failed])
	return nil
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
