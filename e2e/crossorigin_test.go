package e2e_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/leatdev/leat/api"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/task"
)

// answers records the status of every answer of a handler by "METHOD
// PATH".
type answers struct {
	mu   sync.Mutex
	seen map[string][]int
}

func (a *answers) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(sw, r)
		a.mu.Lock()
		defer a.mu.Unlock()
		k := r.Method + " " + r.URL.Path
		a.seen[k] = append(a.seen[k], sw.status)
	})
}

func (a *answers) of(route string) []int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]int(nil), a.seen[route]...)
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// A page of another site, open in a browser on the machine that serves the
// API without a token, can neither enqueue a task with a no-cors fetch nor
// pause a queue with a form; a page whose DNS name points at 127.0.0.1 (a
// rebinding) is not answered at all.
func TestForeignPageCannotWrite(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s := newShop(t, 4, 0)
	s.worker("w1")
	rec := &answers{seen: map[string][]int{}}
	srv := httptest.NewServer(rec.wrap(api.NewHandler(s.served, api.Options{})))
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	port := u.Port()

	// The page of another site: localhost and another port, where the API
	// is at 127.0.0.1.
	page := `<!doctype html><title>elsewhere</title>
<form id="f" method="POST" action="` + srv.URL + `/v1/queues/emails/pause"><input name="a" value="b"></form>
<script>
window.sent = fetch(` + jsString(srv.URL+"/v1/queues/emails/tasks") + `, {method: 'POST', mode: 'no-cors',
  headers: {'Content-Type': 'text/plain'}, body: '{"payload":{"to":"x@example.com"},"id":"evil1"}'})
  .then(() => 'sent', (e) => 'failed: ' + e);
</script>`
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, page)
	}))
	t.Cleanup(other.Close)
	ou, _ := url.Parse(other.URL)

	b := browser(t, chromedp.Flag("host-resolver-rules", "MAP attacker.example 127.0.0.1"))
	run(t, b, "open the other site's page", chromedp.Navigate("http://localhost:"+ou.Port()+"/"), chromedp.WaitReady(chromedp.CSS("#f")))
	if got, err := chromedp.Run(b, chromedp.Evaluate[string](`window.sent`, chromedp.EvalAwaitPromise)); err != nil || got != "sent" {
		t.Fatalf("the page's fetch: %q %v", got, err)
	}
	redistest.Eventually(t, 10*time.Second, "the fetch reached the API", func() bool {
		return len(rec.of("POST /v1/queues/emails/tasks")) > 0
	})
	run(t, b, "submit the form", chromedp.Evaluate[chromedp.Void](`document.getElementById('f').submit()`))
	redistest.Eventually(t, 10*time.Second, "the form reached the API", func() bool {
		return len(rec.of("POST /v1/queues/emails/pause")) > 0
	})
	for _, route := range []string{"POST /v1/queues/emails/tasks", "POST /v1/queues/emails/pause"} {
		if got := rec.of(route); len(got) != 1 || got[0] != http.StatusForbidden {
			t.Errorf("%s answered %v, want one 403", route, got)
		}
	}
	if _, err := s.emails.Info(ctx, "evil1"); !errors.Is(err, task.ErrNotFound) {
		t.Errorf("the page's task: %v, want not found", err)
	}
	notPaused := func() {
		t.Helper()
		res, err := http.Get(srv.URL + "/v1/queues/emails")
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var q struct {
			PausedAt *time.Time `json:"paused_at"`
		}
		if err := json.NewDecoder(res.Body).Decode(&q); err != nil || res.StatusCode != 200 || q.PausedAt != nil {
			t.Fatalf("queue emails: %d %+v %v", res.StatusCode, q, err)
		}
	}
	notPaused()

	// A rebinding: the browser's attacker.example is now 127.0.0.1, and
	// the page is same-origin with the API's port. The API answers none of
	// its requests, neither the page nor its fetches.
	rebound := "http://attacker.example:" + port
	res, err := chromedp.Run(b, chromedp.NavigateResponse(rebound+"/"))
	if err != nil {
		t.Fatalf("open %s: %v", rebound, err)
	}
	if res == nil || res.Status != http.StatusForbidden {
		t.Fatalf("the dashboard at %s: %+v", rebound, res)
	}
	for js, want := range map[string]string{
		`fetch('/v1/queues').then(async r => r.status + ' ' + (await r.json()).code)`: "403 bad_host",
		`fetch('/v1/queues/emails/pause', {method: 'POST', headers: {'Content-Type': 'application/json'}, body: '{}'})
			.then(async r => r.status + ' ' + (await r.json()).code)`: "403 bad_host",
	} {
		if got, err := chromedp.Run(b, chromedp.Evaluate[string](js, chromedp.EvalAwaitPromise)); err != nil || got != want {
			t.Errorf("%s from the rebound page: %q %v, want %q", js, got, err, want)
		}
	}
	if got := rec.of("POST /v1/queues/emails/pause"); len(got) != 2 || got[1] != http.StatusForbidden {
		t.Errorf("the rebound page's pause answered %v", got)
	}
	notPaused()
}
