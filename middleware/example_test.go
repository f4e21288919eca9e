package middleware_test

import (
	"context"
	"fmt"
	"log"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/middleware"
	"github.com/leatdev/leat/stream"
)

// A user-written middleware: it reports each message's entries and result.
func audit(next middleware.Handler) middleware.Handler {
	return func(ctx context.Context, m *middleware.Message) error {
		err := next(ctx, m)
		fmt.Println("handled", m.Stream, m.Processor, m.IDs(), err)
		return err
	}
}

// The app's middleware wraps every processor's; app.Use adds a processor's
// own, inside the app's.
func Example() {
	a, err := app.New(app.Config{Name: "shop", Middleware: []middleware.Middleware{audit}})
	if err != nil {
		log.Fatal(err)
	}
	defer a.Close()
	orders, _ := stream.Declare[event](a, "orders", stream.KeyField("key"))
	_ = app.Process(a, orders, "totals", func(ctx context.Context, events *stream.Events[event]) error {
		for e := range events.All() {
			_ = e.Context() // the chain's context: a Timeout's deadline, a Tracing span
		}
		return nil
	}, app.Use(middleware.Logging(nil)))
}

// Chain composes middleware around a handler, the first outermost.
func ExampleChain() {
	h := middleware.Chain(func(ctx context.Context, m *middleware.Message) error {
		fmt.Println("loop body", m.First().Record)
		return nil
	}, audit)
	_ = h(context.Background(), &middleware.Message{Stream: "orders", Processor: "totals",
		Entries: []middleware.Entry{{ID: "1-0", Record: "an order"}}})
	// Output:
	// loop body an order
	// handled orders totals [1-0] <nil>
}

// A task middleware sees each attempt's run: the payload as JSON before the
// handler, the handler's result after.
func ExampleChainTask() {
	h := middleware.ChainTask(func(ctx context.Context, r *middleware.TaskRun) error {
		r.Result = "sent to " + string(r.Payload) // the handler, decoding the payload
		return nil
	}, func(next middleware.TaskHandler) middleware.TaskHandler {
		return func(ctx context.Context, r *middleware.TaskRun) error {
			err := next(ctx, r)
			fmt.Println(r.Queue, r.ID, "attempt", r.Attempt, "tenant", r.Headers["tenant"], "result", r.Result, err)
			return err
		}
	})
	_ = h(context.Background(), &middleware.TaskRun{Queue: "emails", ID: "t1", Attempt: 1,
		Headers: map[string]string{"tenant": "acme"}, Payload: []byte(`"ada@example.com"`)})
	// Output:
	// emails t1 attempt 1 tenant acme result sent to "ada@example.com" <nil>
}
