package task

import (
	"bytes"
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/leatdev/leat/internal/netguard"
	"github.com/leatdev/leat/internal/rdb"
)

// Defaults of webhook delivery (see WebhookRetry): 5 attempts, 4s after
// the first failure, doubling, so about a minute in all.
const (
	DefaultWebhookAttempts = 5
	DefaultWebhookBackoff  = 4 * time.Second
)

// States of a webhook delivery (WebhookStatus.State).
const (
	WebhookPending   = rdb.HookPending   // the task ended; not delivered yet
	WebhookDelivered = rdb.HookDelivered // the endpoint answered 2xx
	WebhookFailed    = rdb.HookFailed    // out of attempts
)

// webhookTimeout bounds one POST.
const webhookTimeout = 10 * time.Second

// webhookLease is how long a worker holds a delivery it attempts: past it,
// another worker takes the delivery over (its worker died meanwhile).
const webhookLease = 30 * time.Second

// webhookSenders bounds the POSTs one worker makes at once per queue.
const webhookSenders = 4

// A WebhookStatus is the delivery of a task's outcome to its webhook.
type WebhookStatus struct {
	URL         string    `json:"url"`
	State       string    `json:"state,omitempty"` // "" while the task runs; then WebhookPending, WebhookDelivered or WebhookFailed
	Attempts    int       `json:"attempts"`
	LastError   string    `json:"last_error,omitempty"`
	DeliveredAt time.Time `json:"delivered_at,omitzero"`
}

// A WebhookEvent is the JSON body POSTed to a task's webhook when it ends.
type WebhookEvent struct {
	ID         string          `json:"id"`
	Queue      string          `json:"queue"`
	State      State           `json:"state"` // succeeded, failed, dead or cancelled
	Result     json.RawMessage `json:"result,omitempty"`
	Error      string          `json:"error,omitempty"`
	Attempts   int             `json:"attempts"`
	EnqueuedAt time.Time       `json:"enqueued_at"`
	StartedAt  time.Time       `json:"started_at,omitzero"`
	FinishedAt time.Time       `json:"finished_at"`
}

// Webhook has the task's final outcome (a WebhookEvent) POSTed as JSON to
// url, an http or https URL, when it ends: succeeded, failed, dead or
// cancelled. Failed POSTs (not 2xx) are retried with an exponential backoff
// (see WebhookRetry); the delivery shows in the task's Info.
func Webhook(rawURL string) EnqueueOption {
	return enqueueFunc(func(s *enqueueSettings) error {
		if err := checkWebhook(rawURL); err != nil {
			return err
		}
		s.webhook = rawURL
		return nil
	})
}

func checkWebhook(rawURL string) error {
	u, err := url.Parse(rawURL)
	if err != nil {
		return fmt.Errorf("webhook URL %q: %w", rawURL, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return fmt.Errorf("webhook URL %q: want an http or https URL with a host", rawURL)
	}
	return nil
}

// webhookPolicy returns the internal addresses the app lets webhooks reach
// (app.Config.WebhookAllow, checked by app.New).
func (q *core) webhookPolicy() *netguard.Policy {
	p, err := netguard.New(q.app.Config().WebhookAllow)
	if err != nil {
		return &netguard.Policy{}
	}
	return p
}

// checkWebhookTarget refuses a webhook URL whose host is an internal IP
// address the app does not allow; a host name is checked when dialed.
func (q *core) checkWebhookTarget(rawURL string) error {
	u, err := url.Parse(rawURL)
	if err != nil {
		return fmt.Errorf("webhook URL %q: %w", rawURL, err)
	}
	if err := q.webhookPolicy().CheckHost(u.Hostname()); err != nil {
		return fmt.Errorf("webhook URL %q: %w (allow it with app.Config.WebhookAllow, --webhook-allow)", rawURL, err)
	}
	return nil
}

// webhookClient returns the HTTP client of a worker's deliveries: it dials
// only addresses policy allows, whatever a name resolves to, goes through
// no proxy, and follows no redirect (a 3xx answer fails the delivery).
func webhookClient(policy *netguard.Policy) *http.Client {
	return &http.Client{
		Timeout: webhookTimeout,
		Transport: &http.Transport{
			Proxy:                 nil,
			DialContext:           policy.DialContext(&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}),
			ForceAttemptHTTP2:     true,
			MaxIdleConns:          16,
			IdleConnTimeout:       90 * time.Second,
			TLSHandshakeTimeout:   5 * time.Second,
			ExpectContinueTimeout: time.Second,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// WebhookSecret signs the webhook deliveries of the queue's tasks that
// have no secret of their own (WithWebhookSecret), per the Standard
// Webhooks specification: secret is "whsec_" and the base64 of 24 to 64
// random bytes. It is known to the workers whose programs give it, and
// never written to Redis.
func WebhookSecret(secret string) Option {
	return optionFunc(func(s *settings) error {
		if _, err := webhookKey(secret); err != nil {
			return err
		}
		s.hookSecret = secret
		return nil
	})
}

// WithWebhookSecret signs the task's webhook deliveries with secret
// ("whsec_" and the base64 of 24 to 64 random bytes) instead of the queue's
// WebhookSecret. The secret is kept in Redis with the task, so that any
// worker of the queue can sign its delivery; it is never logged nor shown by
// Info.
func WithWebhookSecret(secret string) EnqueueOption {
	return enqueueFunc(func(s *enqueueSettings) error {
		if _, err := webhookKey(secret); err != nil {
			return err
		}
		s.hookSecret = secret
		return nil
	})
}

// webhookKey returns the HMAC key of a whsec_ secret.
func webhookKey(secret string) ([]byte, error) {
	b64, ok := strings.CutPrefix(secret, "whsec_")
	if !ok {
		return nil, errors.New(`webhook secret: want "whsec_" and base64`)
	}
	key, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return nil, errors.New("webhook secret: the part after whsec_ is not base64")
	}
	if len(key) < 24 || len(key) > 64 {
		return nil, fmt.Errorf("webhook secret: %d bytes, want 24 to 64", len(key))
	}
	return key, nil
}

// WebhookRetry sets how webhook deliveries of the queue's tasks are
// retried: at most attempts POSTs, the first retry after about backoff,
// doubling each time, with jitter (default 5 attempts from 4s: about a
// minute). An endpoint's Retry-After (seconds or an HTTP date, at most an
// hour) delays the next attempt further. Answers that will not change
// (400, 404, 405, 410, 413, 422), redirects and refused targets fail the
// delivery at once.
func WebhookRetry(attempts int, backoff time.Duration) Option {
	return optionFunc(func(s *settings) error {
		if attempts < 1 || backoff <= 0 {
			return fmt.Errorf("webhook retry: %d attempts, backoff %s: want at least 1 and a positive backoff", attempts, backoff)
		}
		s.hookTries, s.hookBackoff = attempts, backoff
		return nil
	})
}

// deliver sends the queue's pending webhook deliveries until ctx ends.
// Deliveries wait in Redis, so any worker of the queue sends them, and one
// whose worker died while sending it is taken over when its lease ends.
func (w *worker) deliver(ctx context.Context) {
	q := w.q
	client := webhookClient(q.webhookPolicy())
	defer client.CloseIdleConnections()
	sem := make(chan struct{}, webhookSenders)
	var sending sync.WaitGroup
	defer sending.Wait()
	for ctx.Err() == nil {
		now := time.Now()
		ids, next, ok, err := rdb.ClaimHooks(ctx, w.share.bg, q.ks.TaskWebhooks(q.name), now, webhookLease, webhookSenders)
		wait := time.Second
		if err != nil {
			if ctx.Err() == nil {
				q.log.Warn("taking webhook deliveries failed", "error", err)
			}
		} else {
			if ok {
				wait = min(wait, time.Until(next))
			}
			for _, id := range ids {
				sem <- struct{}{}
				sending.Add(1)
				go func() {
					defer func() { <-sem; sending.Done() }()
					w.send(ctx, client, id)
				}()
			}
			if len(ids) > 0 {
				wait = min(wait, 10*time.Millisecond)
			}
		}
		sleep(ctx, max(wait, 5*time.Millisecond))
	}
}

// send makes one delivery attempt of task id's outcome and records it.
func (w *worker) send(ctx context.Context, client *http.Client, id string) {
	q := w.q
	set := q.ks.TaskWebhooks(q.name)
	h := q.ks.TaskPrefix(q.name) + id
	in, err := q.Info(ctx, id)
	if err != nil || in.Webhook == nil || in.Webhook.State != WebhookPending {
		rdb.DropHook(ctx, q.rdb, set, id) // forgotten, or not pending: nothing to send
		return
	}
	body, _ := json.Marshal(WebhookEvent{
		ID: in.ID, Queue: in.Queue, State: in.State, Result: in.Result, Error: in.Error, Attempts: in.Attempts,
		EnqueuedAt: in.EnqueuedAt, StartedAt: in.StartedAt, FinishedAt: in.FinishedAt,
	})
	secret, err := rdb.HookSecret(ctx, q.rdb, h)
	if err != nil {
		return // Redis is away: the delivery is taken again when its lease ends
	}
	secret = cmp.Or(secret, q.set.hookSecret)
	msg := webhookMessage{id: webhookID(q.name, in), body: body}
	if secret != "" {
		msg.key, _ = webhookKey(secret) // checked when given
	}
	postErr := post(ctx, client, in.Webhook.URL, msg)
	if postErr != nil && ctx.Err() != nil {
		return // the worker stops: the delivery is taken over when its lease ends
	}
	ctx = context.WithoutCancel(ctx)
	attempts := in.Webhook.Attempts + 1
	switch {
	case postErr == nil:
		err = rdb.RecordHookDelivered(ctx, q.rdb, h, set, id, attempts, time.Now())
	case postErr.final || attempts >= q.set.hookTries:
		q.log.Warn("task webhook failed for good", "task", id, "attempts", attempts, "error", postErr)
		err = rdb.RecordHookFailed(ctx, q.rdb, h, set, id, attempts, postErr.Error())
	default:
		due := time.Now().Add(max(hookBackoff(q.set.hookBackoff, attempts), postErr.retryAfter))
		err = rdb.RecordHookRetry(ctx, q.rdb, h, set, id, attempts, postErr.Error(), due)
	}
	if err != nil {
		q.log.Warn("recording a webhook delivery failed", "task", id, "error", err)
	}
}

// hookBackoff returns the wait after failed attempt n (1, 2, ...): base
// doubled at each attempt, with full jitter in its upper half, so that
// deliveries failing together do not come back together.
func hookBackoff(base time.Duration, n int) time.Duration {
	d := base << min(n-1, 20)
	if d <= 0 {
		d = base
	}
	return d/2 + rand.N(d/2+1)
}

// webhookRetryAfterMax bounds the wait an endpoint's Retry-After asks for.
const webhookRetryAfterMax = time.Hour

// finalStatus lists the answers that fail a delivery at once: sending the
// same request again would get the same answer.
var finalStatus = map[int]bool{
	http.StatusBadRequest: true, http.StatusNotFound: true, http.StatusMethodNotAllowed: true,
	http.StatusGone: true, http.StatusRequestEntityTooLarge: true, http.StatusUnprocessableEntity: true,
}

// webhookID returns the webhook-id of a task's delivery: the same for every
// attempt of it (receivers deduplicate on it), another for the delivery of
// a later end of the same task (requeued, it ran again).
func webhookID(queue string, in *Info) string {
	sum := sha256.Sum256([]byte(queue + "\x00" + in.ID + "\x00" + strconv.FormatInt(in.FinishedAt.UnixMilli(), 10)))
	return "msg_" + hex.EncodeToString(sum[:16])
}

// A webhookMessage is what one delivery POSTs.
type webhookMessage struct {
	id   string // webhook-id
	body []byte
	key  []byte // HMAC key of the signature; nil: unsigned
}

// sign returns the webhook-signature of the message sent at ts (Unix
// seconds), per Standard Webhooks: v1, and the base64 of the HMAC-SHA256
// of "id.timestamp.body".
func (m webhookMessage) sign(ts string) string {
	mac := hmac.New(sha256.New, m.key)
	mac.Write([]byte(m.id + "." + ts + "."))
	mac.Write(m.body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// An attemptError is a delivery attempt that failed; final when trying
// again would fail the same way; retryAfter is what the endpoint asked to
// wait (0: nothing).
type attemptError struct {
	err        error
	final      bool
	retryAfter time.Duration
}

func (e *attemptError) Error() string { return e.err.Error() }

// post POSTs the message to url, signed when it has a key; an answer other
// than 2xx is an error. A target the worker may not reach, a redirect (not
// followed) and an answer in finalStatus are final.
func post(ctx context.Context, client *http.Client, url string, m webhookMessage) *attemptError {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(m.body))
	if err != nil {
		return &attemptError{err: err, final: true}
	}
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "leat-webhook")
	req.Header.Set("webhook-id", m.id)
	req.Header.Set("webhook-timestamp", ts)
	if m.key != nil {
		req.Header.Set("webhook-signature", m.sign(ts))
	}
	resp, err := client.Do(req)
	if err != nil {
		return &attemptError{err: err, final: errors.Is(err, netguard.ErrForbidden)}
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode <= 299:
		return nil
	case resp.StatusCode >= 300 && resp.StatusCode <= 399:
		return &attemptError{err: fmt.Errorf("POST %s: %s: redirects are not followed (to %q)", url, resp.Status, resp.Header.Get("Location")), final: true}
	case finalStatus[resp.StatusCode]:
		return &attemptError{err: fmt.Errorf("POST %s: %s: not retried", url, resp.Status), final: true}
	}
	return &attemptError{err: fmt.Errorf("POST %s: %s", url, resp.Status), retryAfter: retryAfter(resp.Header.Get("Retry-After"), time.Now())}
}

// retryAfter reads a Retry-After header, seconds or an HTTP date, as a wait
// from now, at most webhookRetryAfterMax (0 when absent or unreadable).
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	var d time.Duration
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		d = time.Duration(min(max(n, 0), int64(webhookRetryAfterMax/time.Second))) * time.Second
	} else if t, err := http.ParseTime(v); err == nil {
		d = t.Sub(now)
	}
	return min(max(d, 0), webhookRetryAfterMax)
}
