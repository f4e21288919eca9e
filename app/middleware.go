package app

import (
	"context"
	"fmt"
	"runtime/debug"

	"github.com/leatdev/leat/executor"
	"github.com/leatdev/leat/internal/core"
	"github.com/leatdev/leat/middleware"
	"github.com/leatdev/leat/stream"
)

// Use adds middleware around the processor's handling of each event (or
// batch): the first is outermost. The app's Config.Middleware wraps them
// all, so the order is
//
//	Config.Middleware[0] ... Config.Middleware[n-1], Use(mws...)[0] ... [m-1], loop body
//
// An event is acknowledged when the chain returns nil; the chain's error is
// handled like an error from the loop body. Several Use options append.
func Use(mws ...middleware.Middleware) ProcessorOption { return useOption(mws) }

type useOption []middleware.Middleware

func (useOption) apply(*executor.Options) {}

// middlewareOf returns the chain of a processor: the app's, then opts'.
func (a *App) middlewareOf(opts []ProcessorOption) []middleware.Middleware {
	mws := append([]middleware.Middleware(nil), a.cfg.Middleware...)
	for _, o := range opts {
		if u, ok := o.(useOption); ok {
			mws = append(mws, u...)
		}
	}
	return mws
}

// bodyKey carries the loop body of the message in flight to the innermost
// handler of a chain.
type bodyKey struct{}

type bodyRun struct {
	ds   []core.Delivery
	body func(ctx context.Context, ds []core.Delivery) error
}

// withMiddleware returns h with each event or batch handled through mws.
func (a *App) withMiddleware(h core.Handler, streamName, processor string, mws []middleware.Middleware) core.Handler {
	chain := middleware.Chain(func(ctx context.Context, m *middleware.Message) error {
		r, ok := ctx.Value(bodyKey{}).(*bodyRun)
		if !ok {
			return fmt.Errorf("middleware: the context given to the innermost handler does not derive from the chain's")
		}
		sub := make([]core.Delivery, 0, len(m.Entries))
		j := 0
		for _, e := range m.Entries {
			for j < len(r.ds) && r.ds[j].ID != e.ID {
				j++
			}
			if j < len(r.ds) {
				sub = append(sub, r.ds[j])
			}
		}
		return r.body(ctx, sub)
	}, mws...)
	around := func(ctx context.Context, feed core.Feed, ds []core.Delivery, records []any, batch bool, body func(context.Context, []core.Delivery) error) error {
		m := &middleware.Message{
			Stream: streamName, Processor: processor, Partition: ds[0].Partition, Token: feed.Token(),
			Batch: batch, Entries: make([]middleware.Entry, len(ds)), Fence: feed,
			App: a.keys.App, KeyPrefix: a.keys.Prefix, Client: a.client,
		}
		for i := range ds {
			d := &ds[i]
			m.Entries[i] = middleware.Entry{ID: d.ID, Key: d.Key, Headers: stream.Headers(d.Headers), Codec: d.Codec, Data: d.Data,
				Deliveries: d.Deliveries, Record: records[i]}
		}
		return chain(context.WithValue(ctx, bodyKey{}, &bodyRun{ds: ds, body: body}), m)
	}
	return func(ctx context.Context, feed core.Feed) (err error) {
		af := core.NewAroundFeed(ctx, feed, around)
		defer func() {
			if v := recover(); v != nil {
				err = af.Finish(&executor.PanicError{Value: v, Stack: debug.Stack()})
			}
		}()
		return af.Finish(h(ctx, af))
	}
}
