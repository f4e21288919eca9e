package task_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/leatdev/leat/task"
)

// TestWebhook: a task's outcome is POSTed to its webhook when it ends,
// retried with a backoff while the endpoint fails; a webhook that never
// answers ends as failed after the bounded attempts.
func TestWebhook(t *testing.T) {
	e := newEnv(t)
	var mu sync.Mutex
	var posts int
	var got task.WebhookEvent
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		posts++
		if posts <= 2 {
			http.Error(w, "try later", http.StatusServiceUnavailable)
			return
		}
		b, _ := io.ReadAll(r.Body)
		if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" || json.Unmarshal(b, &got) != nil {
			t.Errorf("%s %s: %s", r.Method, r.Header.Get("Content-Type"), b)
		}
	}))
	defer srv.Close()
	// A closed port: connections are refused.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String() + "/hook"
	ln.Close()

	a := e.app("w1")
	q, err := task.Handle(a, "hooked", func(ctx context.Context, tk *task.Task[int]) (int, error) {
		if tk.Payload < 0 {
			return 0, task.SkipRetry(errors.New("negative"))
		}
		return 2 * tk.Payload, nil
	}, task.WebhookRetry(3, 20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	for _, bad := range []string{"ftp://example.com/x", "example.com/x", "http://"} {
		if _, err := q.Enqueue(ctx, 1, task.Webhook(bad)); !errors.Is(err, task.ErrInvalid) {
			t.Errorf("webhook %q: %v", bad, err)
		}
	}
	e.run(a)
	ok, err := q.Enqueue(ctx, 21, task.Webhook(srv.URL+"/done"))
	if err != nil {
		t.Fatal(err)
	}
	failing, err := q.Enqueue(ctx, -1, task.Webhook(dead))
	if err != nil {
		t.Fatal(err)
	}
	var in *task.Info
	eventually(t, 20*time.Second, "the webhook delivered", func() bool {
		in, err = q.Info(ctx, ok)
		return err == nil && in.Webhook != nil && in.Webhook.State == task.WebhookDelivered
	})
	if in.Webhook.Attempts != 3 || in.Webhook.LastError != "" || in.Webhook.DeliveredAt.IsZero() {
		t.Fatalf("%+v", in.Webhook)
	}
	mu.Lock()
	if posts != 3 || got.ID != ok || got.Queue != "hooked" || got.State != task.Succeeded || string(got.Result) != "42" ||
		got.Attempts != 1 || got.FinishedAt.IsZero() || got.StartedAt.IsZero() || got.EnqueuedAt.IsZero() {
		t.Errorf("%d posts, last %+v", posts, got)
	}
	mu.Unlock()
	eventually(t, 20*time.Second, "the dead webhook failed", func() bool {
		in, err = q.Info(ctx, failing)
		return err == nil && in.Webhook != nil && in.Webhook.State == task.WebhookFailed
	})
	if in.State != task.Failed || in.Webhook.Attempts != 3 || in.Webhook.LastError == "" {
		t.Fatalf("%+v %+v", in, in.Webhook)
	}
	if n := e.client.ZCard(ctx, e.prefix+":thook:{shop:task:hooked}").Val(); n != 0 {
		t.Fatalf("%d deliveries still pending", n)
	}
}
