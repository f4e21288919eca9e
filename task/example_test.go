package task_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/task"
	"github.com/redis/go-redis/v9"
)

type Email struct {
	To string `json:"to"`
}

type Receipt struct {
	Message string `json:"message"`
}

// A queue of emails: its handler runs on every worker of the app, and the
// producer waits for a task's result.
func Example() {
	// The test harness's redis-server; use your own URL instead.
	url, err := redistest.SharedURL()
	if err != nil {
		fmt.Println(err)
		return
	}
	opt, _ := redis.ParseURL(url)
	client := redis.NewClient(opt)
	defer client.Close()
	a, err := app.New(app.Config{Name: "mail", Client: client, KeyPrefix: fmt.Sprintf("example-%d", os.Getpid()),
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		panic(err)
	}
	emails, err := task.Handle(a, "emails", func(ctx context.Context, t *task.Task[Email]) (Receipt, error) {
		return Receipt{Message: "sent to " + t.Payload.To}, nil
	}, task.Concurrency(4), task.MaxRetries(3))
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	worker, stop := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- a.Run(worker) }()

	id, err := emails.Enqueue(ctx, Email{To: "ada@example.com"})
	if err != nil {
		panic(err)
	}
	receipt, err := emails.Result(ctx, id)
	fmt.Println(receipt.Message, err)
	stop()
	<-done
	// Output: sent to ada@example.com <nil>
}
