package task_test

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/task"
)

// newSecret returns a Standard Webhooks secret of 32 random bytes.
func newSecret(t *testing.T) string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "whsec_" + base64.StdEncoding.EncodeToString(b)
}

// verifyStandardWebhook checks a request's signature as a receiver
// following the Standard Webhooks specification does, independently of
// leat's code: key from the whsec_ secret, HMAC-SHA256 of
// "id.timestamp.body", any of the space-separated v1 signatures matching,
// and a timestamp within five minutes.
func verifyStandardWebhook(secret string, h http.Header, body []byte) bool {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return false
	}
	id, ts := h.Get("webhook-id"), h.Get("webhook-timestamp")
	sec, err := strconv.ParseInt(ts, 10, 64)
	if id == "" || err != nil || time.Since(time.Unix(sec, 0)).Abs() > 5*time.Minute {
		return false
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + ts + "." + string(body)))
	want := mac.Sum(nil)
	for _, sig := range strings.Fields(h.Get("webhook-signature")) {
		version, b64, ok := strings.Cut(sig, ",")
		got, err := base64.StdEncoding.DecodeString(b64)
		if ok && version == "v1" && err == nil && hmac.Equal(got, want) {
			return true
		}
	}
	return false
}

type hookHit struct {
	at       time.Time
	header   http.Header
	body     []byte
	verified bool
}

// TestWebhookSigned: deliveries are signed per Standard Webhooks with the
// task's secret, else the queue's; the webhook-id is the same for every
// attempt of a delivery; a 400, 404 or 410 answer fails the delivery at
// once; a 503 answer's Retry-After is waited out; the secret shows in no
// Info.
func TestWebhookSigned(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	queueSecret, taskSecret := newSecret(t), newSecret(t)
	var mu sync.Mutex
	hits := map[string][]hookHit{} // by path
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		secret := queueSecret
		if r.URL.Query().Get("own") != "" {
			secret = taskSecret
		}
		mu.Lock()
		hits[r.URL.Path] = append(hits[r.URL.Path], hookHit{at: time.Now(), header: r.Header.Clone(), body: b,
			verified: verifyStandardWebhook(secret, r.Header, b)})
		n := len(hits[r.URL.Path])
		mu.Unlock()
		switch {
		case r.URL.Path == "/gone":
			w.WriteHeader(http.StatusGone)
		case r.URL.Path == "/bad":
			w.WriteHeader(http.StatusBadRequest)
		case r.URL.Path == "/missing":
			w.WriteHeader(http.StatusNotFound)
		case r.URL.Path == "/busy" && n == 1:
			w.Header().Set("Retry-After", "2")
			w.WriteHeader(http.StatusServiceUnavailable)
		case r.URL.Path == "/flaky" && n == 1:
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	defer srv.Close()

	a := webhookApp(e, "w1", "127.0.0.1")
	q, err := task.Handle(a, "signed", func(ctx context.Context, tk *task.Task[int]) (int, error) {
		return tk.Payload, nil
	}, task.WebhookRetry(5, 10*time.Millisecond), task.WebhookSecret(queueSecret))
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"secret", "whsec_???", "whsec_" + base64.StdEncoding.EncodeToString([]byte("short"))} {
		if _, err := q.Enqueue(ctx, 1, task.Webhook(srv.URL), task.WithWebhookSecret(bad)); err == nil {
			t.Errorf("secret %q taken", bad)
		}
	}
	e.run(a)
	ids := map[string]string{}
	for path, opts := range map[string][]task.EnqueueOption{
		"/flaky":   {task.Webhook(srv.URL + "/flaky")},
		"/own":     {task.Webhook(srv.URL + "/own?own=1"), task.WithWebhookSecret(taskSecret)},
		"/gone":    {task.Webhook(srv.URL + "/gone")},
		"/bad":     {task.Webhook(srv.URL + "/bad")},
		"/missing": {task.Webhook(srv.URL + "/missing")},
		"/busy":    {task.Webhook(srv.URL + "/busy")},
	} {
		id, err := q.Enqueue(ctx, 1, opts...)
		if err != nil {
			t.Fatal(err)
		}
		ids[path] = id
	}
	want := map[string]string{"/flaky": task.WebhookDelivered, "/own": task.WebhookDelivered,
		"/gone": task.WebhookFailed, "/bad": task.WebhookFailed, "/missing": task.WebhookFailed, "/busy": task.WebhookDelivered}
	infos := map[string]*task.Info{}
	redistest.Eventually(t, 30*time.Second, "every delivery ended", func() bool {
		for path, id := range ids {
			in, err := q.Info(ctx, id)
			if err != nil || in.Webhook == nil || in.Webhook.State != want[path] {
				return false
			}
			infos[path] = in
		}
		return true
	})
	mu.Lock()
	defer mu.Unlock()
	for path, hs := range hits {
		for i, h := range hs {
			if !h.verified {
				t.Errorf("%s attempt %d: signature does not verify: %v", path, i+1, h.header)
			}
			var ev task.WebhookEvent
			if json.Unmarshal(h.body, &ev) != nil || ev.ID != ids[path] {
				t.Errorf("%s attempt %d: body %s", path, i+1, h.body)
			}
		}
	}
	if f := hits["/flaky"]; len(f) != 2 || f[0].header.Get("webhook-id") != f[1].header.Get("webhook-id") {
		t.Errorf("flaky: %d attempts, webhook-ids not the same", len(f))
	}
	if ids := hits["/own"]; len(ids) != 1 {
		t.Errorf("own: %d attempts", len(ids))
	}
	for path, status := range map[string]string{"/gone": "410", "/bad": "400", "/missing": "404"} {
		if n := len(hits[path]); n != 1 || infos[path].Webhook.Attempts != 1 || !strings.Contains(infos[path].Webhook.LastError, status) {
			t.Errorf("%s: %d requests, %+v; want failed after one", path, n, infos[path].Webhook)
		}
	}
	if b := hits["/busy"]; len(b) != 2 || b[1].at.Sub(b[0].at) < 2*time.Second {
		t.Errorf("busy: %d attempts, the second %s after the first; want 2, not before Retry-After's 2s", len(b), b[len(b)-1].at.Sub(b[0].at))
	}
	for path, in := range infos {
		j, _ := json.Marshal(in)
		if strings.Contains(string(j), strings.TrimPrefix(taskSecret, "whsec_")) || strings.Contains(string(j), strings.TrimPrefix(queueSecret, "whsec_")) {
			t.Errorf("%s: Info shows a secret: %s", path, j)
		}
	}
}
