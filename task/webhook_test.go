package task_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/tools/redistest"
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

	a := webhookApp(e, "w1", "127.0.0.1")
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
	redistest.Eventually(t, 20*time.Second, "the webhook delivered", func() bool {
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
	redistest.Eventually(t, 20*time.Second, "the dead webhook failed", func() bool {
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

// webhookApp is e.app with the webhook allowlist allow: the tests' endpoints
// listen on loopback addresses.
func webhookApp(e *env, id string, allow ...string) *app.App {
	e.t.Helper()
	a, err := app.New(app.Config{
		Name: "shop", Client: e.client, KeyPrefix: e.prefix, WorkerID: id, Logger: testLogger(),
		LeaderLease: time.Second, WebhookAllow: allow,
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return a
}

// TestWebhookTargets: without an allowlist, a webhook whose host is an
// internal IP address is refused at enqueue, and one whose name resolves
// to a loopback address (localhost) fails at delivery, at once, with the
// reason and no request made; a redirect is not followed. The allowlist
// lets the same targets through.
func TestWebhookTargets(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	var posts atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		posts.Add(1)
		if r.URL.Path == "/moved" {
			http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/", http.StatusFound)
		}
	}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	byName := "http://localhost:" + port + "/hook"

	a := webhookApp(e, "w1") // no allowlist
	handler := func(ctx context.Context, tk *task.Task[int]) (int, error) { return tk.Payload, nil }
	q, err := task.Handle(a, "guarded", handler, task.WebhookRetry(5, 10*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	for target, want := range map[string]string{
		"http://169.254.169.254/latest/meta-data/": "link-local",
		srv.URL + "/hook":                          "loopback",
		"http://[::1]:8080/":                       "loopback",
		"http://10.0.0.5/x":                        "private",
		"https://[fd12::1]/x":                      "private",
		"http://0.0.0.0:" + port + "/":             "unspecified",
		"http://224.0.0.1/":                        "multicast",
	} {
		_, err := q.Enqueue(ctx, 1, task.Webhook(target))
		if !errors.Is(err, task.ErrInvalid) || !strings.Contains(err.Error(), want) {
			t.Errorf("webhook %s: %v, want ErrInvalid naming %q", target, err, want)
		}
	}
	e.run(a)
	id, err := q.Enqueue(ctx, 1, task.Webhook(byName))
	if err != nil {
		t.Fatal(err)
	}
	var in *task.Info
	redistest.Eventually(t, 20*time.Second, "the delivery to localhost failed", func() bool {
		in, err = q.Info(ctx, id)
		return err == nil && in.Webhook != nil && in.Webhook.State == task.WebhookFailed
	})
	if in.Webhook.Attempts != 1 || !strings.Contains(in.Webhook.LastError, "loopback") {
		t.Errorf("delivery to %s: %+v, want failed after 1 attempt, the reason recorded", byName, in.Webhook)
	}
	if n := posts.Load(); n != 0 {
		t.Errorf("%d requests reached the loopback endpoint", n)
	}

	// Allowed: a worker with the allowlist delivers; a redirect fails.
	b := webhookApp(e, "w2", "localhost", "127.0.0.1")
	qb, err := task.Handle(b, "allowed", handler, task.WebhookRetry(5, 10*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	e.run(b)
	ok, err := qb.Enqueue(ctx, 1, task.Webhook(byName))
	if err != nil {
		t.Fatal(err)
	}
	moved, err := qb.Enqueue(ctx, 2, task.Webhook(srv.URL+"/moved"))
	if err != nil {
		t.Fatal(err)
	}
	redistest.Eventually(t, 20*time.Second, "both deliveries ended", func() bool {
		x, err1 := qb.Info(ctx, ok)
		y, err2 := qb.Info(ctx, moved)
		if err1 != nil || err2 != nil || x.Webhook == nil || y.Webhook == nil {
			return false
		}
		in = y
		return x.Webhook.State == task.WebhookDelivered && y.Webhook.State == task.WebhookFailed
	})
	if in.Webhook.Attempts != 1 || !strings.Contains(in.Webhook.LastError, "redirects are not followed") {
		t.Errorf("redirected delivery: %+v", in.Webhook)
	}
}
