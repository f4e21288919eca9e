package task_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/task"
	"github.com/redis/go-redis/v9"
)

// exampleApp is the app name on the test harness's redis-server under a key
// prefix of its own; a program passes its own Redis URL or client. The
// caller closes both.
func exampleApp(name string, cfg app.Config) (*app.App, *redis.Client) {
	url, err := redistest.SharedURL()
	if err != nil {
		panic(err)
	}
	opt, err := redis.ParseURL(url)
	if err != nil {
		panic(err)
	}
	client := redis.NewClient(opt)
	cfg.Name, cfg.Client = name, client
	cfg.KeyPrefix = fmt.Sprintf("example-%s-%d", name, os.Getpid())
	cfg.Logger = slog.New(slog.DiscardHandler)
	a, err := app.New(cfg)
	if err != nil {
		panic(err)
	}
	return a, client
}

// runWorker runs a worker of a until the returned function is called, which
// waits for it to stop.
func runWorker(a *app.App) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	return func() { cancel(); <-done }
}

// A producer declares the queue with its types and enqueues; it needs no
// handler. Options set a task's delay, uniqueness, retries, priority or key.
func ExampleQueue_Enqueue() {
	a, client := exampleApp("enqueue", app.Config{})
	defer client.Close()
	defer a.Close()
	emails, err := task.Declare[Email, Receipt](a, "emails")
	if err != nil {
		panic(err)
	}
	ctx := context.Background()

	id, err := emails.Enqueue(ctx, Email{To: "ada@example.com"}, task.Delay(time.Hour))
	if err != nil {
		panic(err)
	}
	in, err := emails.Info(ctx, id)
	if err != nil {
		panic(err)
	}
	fmt.Println("delayed:", in.State)

	first, _ := emails.Enqueue(ctx, Email{To: "bob@example.com"}, task.Unique(time.Minute))
	again, err := emails.Enqueue(ctx, Email{To: "bob@example.com"}, task.Unique(time.Minute))
	fmt.Println("unique:", first == again, errors.Is(err, task.ErrDuplicate))
	// Output:
	// delayed: scheduled
	// unique: true true
}

// A handler's error is retried with backoff, up to the queue's retries;
// task.SkipRetry fails the task at once.
func ExampleHandle() {
	a, client := exampleApp("handle", app.Config{})
	defer client.Close()
	defer a.Close()
	emails, err := task.Handle(a, "emails", func(ctx context.Context, t *task.Task[Email]) (Receipt, error) {
		if t.Attempt == 1 {
			return Receipt{}, errors.New("mail server busy") // retried
		}
		if !strings.Contains(t.Payload.To, "@") {
			return Receipt{}, task.SkipRetry(errors.New("no address")) // failed, not retried
		}
		return Receipt{Message: "sent to " + t.Payload.To}, nil
	}, task.MaxRetries(3), task.Backoff(10*time.Millisecond, 100*time.Millisecond))
	if err != nil {
		panic(err)
	}
	stop := runWorker(a)
	defer stop()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, to := range []string{"ada@example.com", "nobody"} {
		id, err := emails.Enqueue(ctx, Email{To: to})
		if err != nil {
			panic(err)
		}
		in, err := emails.Wait(ctx, id)
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s after %d attempts: %s%s\n", in.State, in.Attempts, in.Result, in.Error)
	}
	// Output:
	// succeeded after 2 attempts: {"message":"sent to ada@example.com"}
	// failed after 2 attempts: leat: skip retry: no address
}

// A cron schedule enqueues a task at every tick, once, from the queue's
// leader; its task IDs name the schedule and the tick.
func ExampleQueue_Cron() {
	a, client := exampleApp("cron", app.Config{})
	defer client.Close()
	defer a.Close()
	ran := make(chan string, 10)
	reports, err := task.Handle(a, "reports", func(ctx context.Context, t *task.Task[Email]) (Receipt, error) {
		ran <- t.ID
		return Receipt{Message: "report to " + t.Payload.To}, nil
	})
	if err != nil {
		panic(err)
	}
	// Every second; "0 8 * * *" is every day at 08:00, "@hourly" every hour.
	if err := reports.Cron("daily", "@every 1s", Email{To: "team@example.com"}); err != nil {
		panic(err)
	}
	stop := runWorker(a)
	defer stop()
	select {
	case id := <-ran:
		fmt.Println(strings.HasPrefix(id, "cron:daily:"))
	case <-time.After(10 * time.Second):
		fmt.Println("no tick")
	}
	// Output: true
}

// A webhook receives the task's outcome as JSON when it ends. Deliveries
// to loopback and private addresses are refused unless the app allows
// them (app.Config.WebhookAllow); here the endpoint is on loopback.
func ExampleWebhook() {
	events := make(chan task.WebhookEvent, 1)
	endpoint := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ev task.WebhookEvent
		if err := json.NewDecoder(r.Body).Decode(&ev); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		events <- ev
	}))
	defer endpoint.Close()

	a, client := exampleApp("webhook", app.Config{WebhookAllow: []string{"127.0.0.1"}})
	defer client.Close()
	defer a.Close()
	emails, err := task.Handle(a, "emails", func(ctx context.Context, t *task.Task[Email]) (Receipt, error) {
		return Receipt{Message: "sent to " + t.Payload.To}, nil
	})
	if err != nil {
		panic(err)
	}
	stop := runWorker(a)
	defer stop()

	if _, err := emails.Enqueue(context.Background(), Email{To: "ada@example.com"}, task.Webhook(endpoint.URL+"/done")); err != nil {
		panic(err)
	}
	select {
	case ev := <-events:
		fmt.Println(ev.Queue, ev.State, string(ev.Result))
	case <-time.After(10 * time.Second):
		fmt.Println("no delivery")
	}
	// Output: emails succeeded {"message":"sent to ada@example.com"}
}
