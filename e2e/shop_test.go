package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leatdev/leat/api"
	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/inspect"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/stream"
	"github.com/leatdev/leat/task"
	"github.com/redis/go-redis/v9"
)

type order struct {
	Customer string `json:"customer"`
	N        int    `json:"n"`
}

type email struct {
	To string `json:"to"`
}

// shop is app "shop" on the test server: stream "orders" whose processor
// "billing" runs on the workers, a poison order that quarantines its
// partition, a customer whose orders block (so that its partition has lag
// and pending entries), and task queue "emails" whose handler fails while
// broken is set.
type shop struct {
	t          *testing.T
	client     *redis.Client
	prefix     string
	partitions int
	size       int64                 // retention per partition (0: the default)
	prefetch   int                   // events buffered per partition by a worker
	orders     *stream.Stream[order] // on the serving app
	emails     *task.Queue[email, string]
	inspect    *inspect.Inspector
	broken     atomic.Bool
	slow       func(partition int) time.Duration // per event, on the workers
	blocked    string                            // this customer's orders never finish
	poison     string                            // this customer's order 0 fails
	blockedP   int
	poisonP    int
	served     *app.App
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func newShop(t *testing.T, partitions int, size int64) *shop {
	t.Helper()
	c, prefix := redistest.Client(t)
	s := &shop{t: t, client: c, prefix: prefix, partitions: partitions, size: size, prefetch: 20}
	s.served = s.app("api")
	var err error
	if s.orders, err = s.declare(s.served); err != nil {
		t.Fatal(err)
	}
	if err := s.served.Register(context.Background()); err != nil {
		t.Fatal(err)
	}
	s.inspect = inspect.New(c, prefix, "shop")
	// Two customers on distinct partitions.
	s.blocked, s.blockedP = s.customerNotOn(-1)
	s.poison, s.poisonP = s.customerNotOn(s.blockedP)
	return s
}

// customerNotOn returns a customer whose partition is not p, and its
// partition.
func (s *shop) customerNotOn(p int) (string, int) {
	for i := 0; ; i++ {
		c := fmt.Sprintf("special-%d", i)
		q, err := s.orders.Partition(order{Customer: c})
		if err != nil {
			s.t.Fatal(err)
		}
		if q != p {
			return c, q
		}
	}
}

// declare declares stream orders on a.
func (s *shop) declare(a *app.App) (*stream.Stream[order], error) {
	opts := []stream.Option{stream.KeyField("customer"), stream.Partitions(s.partitions)}
	if s.size > 0 {
		opts = append(opts, stream.Size(s.size))
	}
	return stream.Declare[order](a, "orders", opts...)
}

func (s *shop) app(worker string) *app.App {
	s.t.Helper()
	a, err := app.New(app.Config{Name: "shop", Client: s.client, KeyPrefix: s.prefix, WorkerID: worker, Logger: quiet(), LeaderLease: 2 * time.Second})
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() { a.Close() })
	return a
}

// worker runs a worker with the processor and the task queue until the
// test ends.
func (s *shop) worker(id string) {
	s.t.Helper()
	a := s.app(id)
	st, err := s.declare(a)
	if err != nil {
		s.t.Fatal(err)
	}
	perCustomer, err := stream.DeclareTable[int](st, "billing", "orders-per-customer")
	if err != nil {
		s.t.Fatal(err)
	}
	err = app.Process(a, st, "billing", func(ctx context.Context, events *stream.Events[order]) error {
		tbl := perCustomer.In(events)
		for e := range events.All() {
			n, _, err := tbl.Get(ctx, e.Record.Customer)
			if err != nil {
				return err
			}
			if err := tbl.Set(e.Record.Customer, n+1); err != nil {
				return err
			}
			if e.Record.Customer == s.blocked {
				<-ctx.Done()
				return ctx.Err()
			}
			if e.Record.Customer == s.poison && e.Record.N == 0 {
				return errors.New("card declined: order 0 of " + s.poison)
			}
			if s.slow != nil {
				if d := s.slow(e.Partition); d > 0 {
					t := time.NewTimer(d)
					select {
					case <-ctx.Done():
						t.Stop()
						return ctx.Err()
					case <-t.C:
					}
				}
			}
		}
		return nil
	}, app.OnError(app.Quarantine), app.Retries(0), app.Prefetch(s.prefetch), app.JoinDelay(100*time.Millisecond), app.Grace(200*time.Millisecond))
	if err != nil {
		s.t.Fatal(err)
	}
	q, err := task.Handle(a, "emails", func(ctx context.Context, tk *task.Task[email]) (string, error) {
		if s.broken.Load() {
			return "", errors.New("smtp: connection refused")
		}
		return "sent to " + tk.Payload.To, nil
	}, task.MaxRetries(0))
	if err != nil {
		s.t.Fatal(err)
	}
	if s.emails == nil {
		s.emails = q
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = a.Run(ctx) }()
	s.t.Cleanup(func() { cancel(); wg.Wait() })
}

// send sends n orders of each customer.
func (s *shop) send(ctx context.Context, customers []string, n int) {
	s.t.Helper()
	var recs []order
	for i := range n {
		for _, c := range customers {
			recs = append(recs, order{Customer: c, N: i})
		}
	}
	if _, err := s.orders.SendMany(ctx, recs); err != nil {
		s.t.Fatal(err)
	}
}

// serve serves the app's API and dashboard.
func (s *shop) serve(opts api.Options) *httptest.Server {
	srv := httptest.NewServer(api.NewHandler(s.served, opts))
	s.t.Cleanup(srv.Close)
	return srv
}

// report returns what package inspect says of the stream.
func (s *shop) report(ctx context.Context) *inspect.StreamReport {
	s.t.Helper()
	rep, err := s.inspect.Stream(ctx, "orders")
	if err != nil {
		s.t.Fatal(err)
	}
	return rep
}
