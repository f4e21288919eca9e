package task

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/leatdev/leat/internal/netguard"
	"github.com/leatdev/leat/internal/scripts"
	"github.com/redis/go-redis/v9"
)

// Defaults of webhook delivery (see WebhookRetry): 5 attempts, 4s after
// the first failure, doubling, so about a minute in all.
const (
	DefaultWebhookAttempts = 5
	DefaultWebhookBackoff  = 4 * time.Second
)

// States of a webhook delivery (WebhookStatus.State).
const (
	WebhookPending   = "pending"   // the task ended; not delivered yet
	WebhookDelivered = "delivered" // the endpoint answered 2xx
	WebhookFailed    = "failed"    // out of attempts
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

// WebhookRetry sets how webhook deliveries of the queue's tasks are
// retried: at most attempts POSTs, the first retry after backoff, doubling
// each time (default 5 attempts from 4s: about a minute).
func WebhookRetry(attempts int, backoff time.Duration) Option {
	return optionFunc(func(s *settings) error {
		if attempts < 1 || backoff <= 0 {
			return fmt.Errorf("webhook retry: %d attempts, backoff %s: want at least 1 and a positive backoff", attempts, backoff)
		}
		s.hookTries, s.hookBackoff = attempts, backoff
		return nil
	})
}

// claimHooks takes up to ARGV[3] due deliveries: KEYS webhook set; ARGV
// now ms, lease ms, count. Each taken is pushed a lease ahead.
var claimHooks = redis.NewScript(scripts.Describe("webhook claim", `
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[3]))
for _, id in ipairs(ids) do redis.call('ZADD', KEYS[1], tonumber(ARGV[1]) + tonumber(ARGV[2]), id) end
local next = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
return {ids, next[2] or ''}
`))

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
		v, err := claimHooks.Run(ctx, w.share.bg, []string{q.ks.TaskWebhooks(q.name)}, now.UnixMilli(), webhookLease.Milliseconds(), webhookSenders).Slice()
		wait := time.Second
		if err != nil {
			if ctx.Err() == nil {
				q.log.Warn("taking webhook deliveries failed", "error", err)
			}
		} else {
			ids, _ := v[0].([]any)
			if s, _ := v[1].(string); s != "" {
				if due, err := strconv.ParseFloat(s, 64); err == nil {
					wait = min(wait, time.Until(time.UnixMilli(int64(due))))
				}
			}
			for _, id := range ids {
				id, _ := id.(string)
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
		q.rdb.ZRem(ctx, set, id) // forgotten, or not pending: nothing to send
		return
	}
	body, _ := json.Marshal(WebhookEvent{
		ID: in.ID, Queue: in.Queue, State: in.State, Result: in.Result, Error: in.Error, Attempts: in.Attempts,
		EnqueuedAt: in.EnqueuedAt, StartedAt: in.StartedAt, FinishedAt: in.FinishedAt,
	})
	postErr := post(ctx, client, in.Webhook.URL, body)
	if postErr != nil && ctx.Err() != nil {
		return // the worker stops: the delivery is taken over when its lease ends
	}
	ctx = context.WithoutCancel(ctx)
	attempts := in.Webhook.Attempts + 1
	pipe := q.rdb.TxPipeline()
	switch {
	case postErr == nil:
		pipe.HSet(ctx, h, "whs", WebhookDelivered, "wha", attempts, "whd", time.Now().UnixMilli())
		pipe.HDel(ctx, h, "whe")
		pipe.ZRem(ctx, set, id)
	case postErr.final || attempts >= q.set.hookTries:
		pipe.HSet(ctx, h, "whs", WebhookFailed, "wha", attempts, "whe", postErr.Error())
		pipe.ZRem(ctx, set, id)
		q.log.Warn("task webhook failed for good", "task", id, "attempts", attempts, "error", postErr)
	default:
		d := q.set.hookBackoff << min(attempts-1, 20)
		pipe.HSet(ctx, h, "wha", attempts, "whe", postErr.Error())
		pipe.ZAdd(ctx, set, redis.Z{Score: float64(time.Now().Add(d).UnixMilli()), Member: id})
	}
	if _, err := pipe.Exec(ctx); err != nil {
		q.log.Warn("recording a webhook delivery failed", "task", id, "error", err)
	}
}

// An attemptError is a delivery attempt that failed; final when trying
// again would fail the same way.
type attemptError struct {
	err   error
	final bool
}

func (e *attemptError) Error() string { return e.err.Error() }

// post POSTs body to url; an answer other than 2xx is an error. A target
// the worker may not reach and a redirect (not followed) are final.
func post(ctx context.Context, client *http.Client, url string, body []byte) *attemptError {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return &attemptError{err: err, final: true}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "leat-webhook")
	resp, err := client.Do(req)
	if err != nil {
		return &attemptError{err: err, final: errors.Is(err, netguard.ErrForbidden)}
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	switch {
	case resp.StatusCode >= 300 && resp.StatusCode <= 399:
		return &attemptError{err: fmt.Errorf("POST %s: %s: redirects are not followed (to %q)", url, resp.Status, resp.Header.Get("Location")), final: true}
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		return &attemptError{err: fmt.Errorf("POST %s: %s", url, resp.Status)}
	}
	return nil
}
