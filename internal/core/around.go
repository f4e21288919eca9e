package core

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
)

// ErrLoopLeft is the loop body's result, as a middleware chain sees it, when
// the processor left the loop (break, return) and then returned nil: the
// event was not processed and stays pending, as without middleware.
var ErrLoopLeft = errors.New("stream: the processor left the loop without an error")

// Around runs the handling of one event or one batch, ds with their decoded
// records, through a middleware chain; batch tells a batch (Events.Batches)
// from an event (package middleware, wired by package
// app). body runs the processor's loop body over the deliveries it is given
// (a subsequence of ds) and returns its result: nil when the body finished,
// or the processor's error when the body left the loop. A nil result
// acknowledges all of ds; an error goes to the processor's retries and
// failure policy.
type Around func(ctx context.Context, feed Feed, ds []Delivery, records []any, batch bool, body func(ctx context.Context, ds []Delivery) error) error

// AroundFeed is a Feed whose events are handled through an Around. The
// loop body of a range-over-func loop cannot return an error, so the chain
// runs on a goroutine of its own and asks the processor's goroutine to run
// the body; when the body leaves the loop, the chain waits until the
// processor returns with the error (Finish).
type AroundFeed struct {
	Feed
	ctx    context.Context
	around Around
	susp   *aroundRun // a chain waiting for the processor's error
	failed error      // a chain's error, returned by the processor call
}

type aroundCall struct {
	ctx context.Context
	ds  []Delivery
}

type aroundRun struct {
	req  chan aroundCall
	res  chan error
	done chan error
	ds   []Delivery
}

// NewAroundFeed returns feed with its events handled through around, for a
// processor call with context ctx.
func NewAroundFeed(ctx context.Context, feed Feed, around Around) *AroundFeed {
	return &AroundFeed{Feed: feed, ctx: ctx, around: around}
}

// Handle runs the chain over ds (records decoded). body runs the loop body
// over the deliveries given and reports whether the loop goes on (false when
// it was left). Handle acknowledges ds when the chain returns nil and
// reports whether the iterator goes on.
func (a *AroundFeed) Handle(ds []Delivery, records []any, batch bool, body func(ctx context.Context, ds []Delivery) bool) bool {
	if a.failed != nil || a.susp != nil {
		return false
	}
	r := &aroundRun{req: make(chan aroundCall), res: make(chan error), done: make(chan error, 1), ds: ds}
	go func() {
		var err error
		defer func() {
			if v := recover(); v != nil {
				err = fmt.Errorf("middleware panic: %v\n%s", v, debug.Stack())
			}
			r.done <- err
		}()
		err = a.around(a.ctx, a.Feed, ds, records, batch, func(ctx context.Context, sub []Delivery) error {
			if len(sub) == 0 {
				return nil
			}
			r.req <- aroundCall{ctx: ctx, ds: sub}
			return <-r.res
		})
	}()
	runs := 0
	for {
		select {
		case c := <-r.req:
			if runs++; runs > 1 {
				// A middleware runs the body again (a retry): what the
				// last run wrote to tables is not kept.
				a.Feed.Discard()
			}
			if body(c.ctx, c.ds) {
				r.res <- nil
				continue
			}
			// The body left the loop: the processor is returning, and
			// Finish hands its error to the chain.
			a.susp = r
			return false
		case err := <-r.done:
			if err != nil {
				a.failed = err
				return false
			}
			a.Feed.Done(ds)
			return true
		}
	}
}

// Finish completes the processor call that returned err: a chain waiting
// for the loop body's error gets it (ErrLoopLeft for nil), and the chain's
// result becomes the call's. It returns the error for the runtime.
func (a *AroundFeed) Finish(err error) error {
	if r := a.susp; r != nil {
		a.susp = nil
		bodyErr := err
		if bodyErr == nil {
			bodyErr = ErrLoopLeft
		}
		for {
			select {
			case <-r.req: // the chain runs the body again: it cannot
				r.res <- bodyErr
				continue
			case r.res <- bodyErr:
				continue
			case cerr := <-r.done:
				switch {
				case cerr == nil && err == nil:
					return nil // left the loop; the middleware let it go: pending as before
				case cerr == nil:
					// A middleware handled the error: the events are done,
					// without the table writes of the body that failed.
					a.Feed.Discard()
					a.Feed.Done(r.ds)
					return nil
				case errors.Is(cerr, ErrLoopLeft) && err == nil:
					return nil
				}
				return cerr
			}
		}
	}
	if a.failed != nil {
		f := a.failed
		a.failed = nil
		return f
	}
	return err
}
