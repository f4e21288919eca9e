package app_test

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/executor"
	"github.com/leatdev/leat/stream"
	"github.com/redis/go-redis/v9"
)

// customer and purchase are the records of the join tests: purchases keyed
// by customer, joined with the customers table keyed by customer.
type customer struct {
	ID   string `msgpack:"id"`
	Name string `msgpack:"name"`
	Rate int    `msgpack:"rate"`
	Gone bool   `msgpack:"gone"` // delete the customer
}

type purchase struct {
	ID       int    `msgpack:"id"`
	Customer string `msgpack:"customer"`
	Cents    int    `msgpack:"cents"`
}

// shopJoin is the join tests' declarations: processor "profiles" keeps the
// customers table over stream customers; processor "enrich" of stream
// purchases joins each purchase with its customer and adds cents x rate to
// the customer's total.
type shopJoin struct {
	customers *stream.Stream[customer]
	purchases *stream.Stream[purchase]
	profiles  *stream.Table[customer]
	totals    *stream.Table[int]
	join      *stream.JoinedTable[purchase, customer]
}

func declareShopJoin(a *app.App, partitions int) (*shopJoin, error) {
	var s shopJoin
	var err error
	if s.customers, err = stream.Declare[customer](a, "customers", stream.KeyField("id"), stream.Partitions(partitions)); err != nil {
		return nil, err
	}
	if s.purchases, err = stream.Declare[purchase](a, "purchases", stream.KeyField("customer"), stream.Partitions(partitions)); err != nil {
		return nil, err
	}
	if s.profiles, err = stream.DeclareTable[customer](s.customers, "profiles", "customers", stream.KeepChanges(1000)); err != nil {
		return nil, err
	}
	if s.totals, err = stream.DeclareTable[int](s.purchases, "enrich", "totals"); err != nil {
		return nil, err
	}
	if s.join, err = stream.Join(s.purchases, s.profiles); err != nil {
		return nil, err
	}
	return &s, nil
}

// processProfiles registers the processor that keeps the customers table.
func (s *shopJoin) processProfiles(a *app.App) error {
	return app.Process(a, s.customers, "profiles", func(ctx context.Context, events *stream.Events[customer]) error {
		st := s.profiles.In(events)
		for e := range events.All() {
			if e.Record.Gone {
				if err := st.Delete(e.Record.ID); err != nil {
					return err
				}
				continue
			}
			if err := st.Set(e.Record.ID, e.Record); err != nil {
				return err
			}
		}
		return nil
	})
}

// processEnrich registers the joining processor: batches of up to batch
// purchases, joined in one read, each adding cents x its customer's rate
// to the customer's total; then after is called with the batch (before
// its acknowledgement).
func (s *shopJoin) processEnrich(a *app.App, batch int, after func(ctx context.Context, n int)) error {
	return app.Process(a, s.purchases, "enrich", func(ctx context.Context, events *stream.Events[purchase]) error {
		st := s.totals.In(events)
		for es := range events.Batches(batch, 5*time.Millisecond) {
			found, ok, err := s.join.GetBatch(ctx, es)
			if err != nil {
				return err
			}
			for i, e := range es {
				if !ok[i] {
					return fmt.Errorf("purchase %d: no customer %q", e.Record.ID, e.Record.Customer)
				}
				n, _, err := st.Get(ctx, e.Record.Customer)
				if err != nil {
					return err
				}
				if err := st.Set(e.Record.Customer, n+e.Record.Cents*found[i].Rate); err != nil {
					return err
				}
			}
			if after != nil {
				after(ctx, len(es))
			}
		}
		return nil
	})
}

// joinModeEnv starts the test binary as a worker of the joining processor
// (joinProcessMain), for the kill test.
const joinModeEnv = "LEAT_TEST_JOIN_PROCESS"

func joinedKey(prefix string) string { return prefix + ":test:joined" }

// joinProcessMain runs processor "enrich" until SIGTERM, counting the
// purchases it handed to the loop body in joinedKey, and waiting
// LEAT_TEST_DELAY after each batch's writes, before its acknowledgement: a
// kill then lands between the writes and their commit.
func joinProcessMain() int {
	url, prefix, id := os.Getenv("LEAT_TEST_REDIS_URL_W"), os.Getenv("LEAT_TEST_PREFIX"), os.Getenv("LEAT_TEST_WORKER_ID")
	parts, _ := strconv.Atoi(os.Getenv("LEAT_TEST_PARTITIONS"))
	delay, _ := time.ParseDuration(os.Getenv("LEAT_TEST_DELAY"))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	opt, err := redis.ParseURL(url)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	c := redis.NewClient(opt)
	defer c.Close()
	a, err := app.New(app.Config{
		Name: "shop", Client: c, KeyPrefix: prefix, WorkerID: id, Logger: testLogger(),
		Processing:  executor.Options{LockExpiry: 2 * time.Second, ReadBlock: 200 * time.Millisecond, Grace: 2 * time.Second},
		LeaderLease: 2 * time.Second,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	s, err := declareShopJoin(a, parts)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	err = s.processEnrich(a, 20, func(ctx context.Context, n int) {
		c.IncrBy(context.WithoutCancel(ctx), joinedKey(prefix), int64(n))
		time.Sleep(delay) // writes staged, not committed: a kill lands here most often
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	fmt.Println("ready")
	if err := a.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}
