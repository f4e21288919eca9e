package task

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/middleware"
)

// Use adds middleware around each attempt of the queue's tasks (logging,
// tracing, metrics, payload transformations; see package middleware): the
// first is outermost. The app's Config.TaskMiddleware wraps them all, so
// the order is
//
//	Config.TaskMiddleware[0] ... [n-1], Use(mws...)[0] ... [m-1], decoding the payload and the handler
//
// The chain's error is the attempt's, handled as a handler's error (retried
// with backoff, SkipRetry, RetryAfter); a panic in a middleware is an error
// too. The handler decodes the payload the chain hands it and its result
// is encoded from the run's Result once the chain returns nil. Several Use
// options append. It applies to the workers whose program gives it.
func Use(mws ...middleware.TaskMiddleware) Option {
	return optionFunc(func(s *settings) error {
		s.mws = append(s.mws, mws...)
		return nil
	})
}

// runKey carries the fetched task to the innermost handler of a chain.
type runKey struct{}

// chained returns the queue's handler wrapped in the app's and the queue's
// middleware, or nil when there is none.
func (q *Queue[P, R]) chained() middleware.TaskHandler {
	mws := append(append([]middleware.TaskMiddleware(nil), q.app.Config().TaskMiddleware...), q.set.mws...)
	if len(mws) == 0 {
		return nil
	}
	return middleware.ChainTask(func(ctx context.Context, r *middleware.TaskRun) error {
		f, ok := ctx.Value(runKey{}).(*rdb.Fetched)
		if !ok {
			return SkipRetry(errors.New("task middleware: the context given to the innermost handler does not derive from the chain's"))
		}
		res, err := q.call(ctx, f, r.Payload, r.Headers)
		if err != nil {
			return err
		}
		r.Result = res
		return nil
	}, mws...)
}

// runChain runs f through the queue's middleware.
func (q *Queue[P, R]) runChain(ctx context.Context, f *rdb.Fetched) ([]byte, error) {
	h, err := decodeHeaders(f.Headers)
	if err != nil {
		return nil, SkipRetry(err)
	}
	r := &middleware.TaskRun{
		Queue: q.name, ID: f.ID, Key: f.Key, Attempt: f.Attempt, MaxRetries: f.MaxRetry,
		EnqueuedAt: f.Enqueued, Headers: h, Payload: json.RawMessage(f.Payload), Worker: q.worker,
		App: q.ks.App, KeyPrefix: q.ks.Prefix, Client: q.rdb,
	}
	r.Deadline, _ = ctx.Deadline()
	if err := q.chain(context.WithValue(ctx, runKey{}, f), r); err != nil {
		return nil, err
	}
	b, err := encodePayload(r.Result) // a raw result is checked as a raw payload is
	if err != nil {
		return nil, SkipRetry(fmt.Errorf("encode result: %w", err))
	}
	return b, nil
}
