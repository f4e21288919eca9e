// Starting a task: each task a fetch took runs at once on a goroutine of
// its own, under its timeout and the worker's stop, and its run ends in an
// outcome (succeeded, retried, dead, failed, cancelled, handed back or
// snoozed) that goes to the completer.

package task

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/leatdev/leat/internal/rdb"
)

// run calls the typed handler on a fetched task, through the queue's
// middleware when it has any.
func (q *Queue[P, R]) run(ctx context.Context, f *rdb.Fetched) ([]byte, error) {
	if q.chain != nil {
		return q.runChain(ctx, f)
	}
	h, err := decodeHeaders(f.Headers)
	if err != nil {
		return nil, SkipRetry(err)
	}
	r, err := q.call(ctx, f, f.Payload, h)
	if err != nil {
		return nil, err
	}
	b, err := encodePayload(r) // a raw result is checked as a raw payload is
	if err != nil {
		return nil, SkipRetry(fmt.Errorf("encode result: %w", err))
	}
	return b, nil
}

// call decodes payload and calls the handler with f's task.
func (q *Queue[P, R]) call(ctx context.Context, f *rdb.Fetched, payload []byte, headers map[string]string) (R, error) {
	t := &Task[P]{
		ID: f.ID, Queue: q.name, Attempt: f.Attempt, MaxRetries: f.MaxRetry, Key: f.Key, EnqueuedAt: f.Enqueued,
		Headers: headers,
	}
	t.Deadline, _ = ctx.Deadline()
	t.rep = q.updates(f)
	if err := json.Unmarshal(payload, &t.Payload); err != nil {
		var zero R
		return zero, SkipRetry(fmt.Errorf("decode payload: %w", err))
	}
	parents, err := q.parents(ctx, f.ID)
	if err != nil {
		var zero R
		return zero, err
	}
	t.Parents = parents
	return q.handler(withNode(ctx, q.core, f.ID), t)
}

// start runs f's handler on its own goroutine.
func (w *worker) start(runCtx context.Context, f *rdb.Fetched) {
	timeout := f.Timeout
	if timeout <= 0 {
		timeout = w.q.set.timeout
	}
	tctx, cancel := context.WithCancelCause(runCtx)
	tctx, cancelTimeout := context.WithTimeoutCause(tctx, timeout, ErrTimeout)
	r := &running{f: f, cancel: cancel}
	w.mu.Lock()
	w.active[f.ID] = r
	w.mu.Unlock()
	w.working.Add(1)
	go func() {
		defer w.working.Done()
		growStack()
		began := time.Now()
		res, err := w.call(tctx, f)
		took := time.Since(began)
		cause := context.Cause(tctx)
		cancelTimeout()
		cancel(nil)
		// Active, so touched, until the completer has its outcome: one that
		// waits for room (the completer failing) is not reclaimed meanwhile,
		// and its slot stays taken, so no more tasks are fetched than can
		// be recorded.
		w.report(ended{Outcome: w.outcome(f, res, err, cause), attempt: f.Attempt, took: took})
		w.mu.Lock()
		if w.active[f.ID] == r {
			delete(w.active, f.ID)
		}
		w.mu.Unlock()
		w.signal()
	}()
}

// call runs the handler, turning a panic into an error.
func (w *worker) call(ctx context.Context, f *rdb.Fetched) (res []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("task handler panicked: %v\n%s", r, debug.Stack())
		}
	}()
	return w.s.run(ctx, f)
}

// outcome decides what becomes of a task after a run.
func (w *worker) outcome(f *rdb.Fetched, res []byte, err error, cause error) rdb.Outcome {
	o := rdb.Outcome{ID: f.ID, Entry: f.Entry, Level: f.Level}
	switch {
	case err == nil:
		o.Kind, o.Data = rdb.OK, res
		return o
	case errors.Is(cause, errStopping):
		o.Kind = rdb.Handback
		return o
	case errors.Is(cause, ErrCancelled):
		o.Kind, o.Data = rdb.Cancelled, []byte("cancelled")
		return o
	case errors.Is(err, ErrHandBack):
		o.Kind = rdb.Handback // not run: the handler had no process for it
		return o
	}
	if sz := (*SnoozeError)(nil); errors.As(err, &sz) {
		o.Kind, o.Delay = rdb.Snooze, sz.After
		return o
	}
	switch {
	case errors.Is(cause, ErrTimeout):
		err = fmt.Errorf("%w after %s: %w", ErrTimeout, f.Timeout, err)
	}
	o.Data = []byte(err.Error())
	switch {
	case errors.Is(err, ErrSkipRetry):
		o.Kind = rdb.Fail
	case f.Attempt > f.MaxRetry:
		o.Kind = rdb.Dead
	default:
		o.Kind, o.Delay = rdb.Retry, w.q.set.retryDelay(f.Attempt, err)
	}
	return o
}

// growStack grows the calling goroutine's stack to 16 KB at once, while it
// is shallow. A handler's goroutine starts with a small stack; decoding a
// payload (encoding/json, reflection) grows it in steps, each copying a
// deeper stack and adjusting every frame's pointers. Grown at the start,
// the copy is of a frame or two.
//
//go:noinline
func growStack() {
	var frame [stackFrame]byte
	touch(frame[:])
}

// stackFrame is a frame size whose goroutine's stack grows to 16 KB.
const stackFrame = 10 << 10

//go:noinline
func touch(b []byte) { b[len(b)-1] = 0 }
