package app_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/stream"
	"github.com/redis/go-redis/v9"
)

// customerIDs returns n customer IDs with every partition of s holding
// some.
func customerIDs(t *testing.T, s *stream.Stream[customer], n int) []string {
	t.Helper()
	parts := map[int]bool{}
	var ids []string
	for i := 0; len(ids) < n || len(parts) < s.Definition().Partitions; i++ {
		id := fmt.Sprintf("c-%d", i)
		p, err := s.Partition(customer{ID: id})
		if err != nil {
			t.Fatal(err)
		}
		parts[p] = true
		ids = append(ids, id)
	}
	return ids
}

func sendCustomers(t *testing.T, s *stream.Stream[customer], cs []customer) {
	t.Helper()
	if _, err := s.SendMany(context.Background(), cs); err != nil {
		t.Fatal(err)
	}
}

// waitProfiles waits until the customers table holds want (a customer
// with Gone: none).
func waitProfiles(t *testing.T, tbl *stream.Table[customer], want map[string]customer) {
	t.Helper()
	redistest.Eventually(t, 20*time.Second, "the customers table", func() bool {
		for id, w := range want {
			got, ok, err := tbl.Get(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			if ok == w.Gone || (ok && got != w) {
				return false
			}
		}
		return true
	})
}

// otherPartition returns a customer ID routed to another partition than p.
func otherPartition(s *stream.Stream[customer], p int) string {
	for i := 0; ; i++ {
		id := fmt.Sprintf("other-%d", i)
		if q, _ := s.Partition(customer{ID: id}); q != p {
			return id
		}
	}
}

// A join reads the value the other processor committed for the event's
// key: purchases of customers whose rate changed between them are
// multiplied by the rate committed when they are processed; a batch's keys
// are read in one round trip.
func TestJoinReadsCommittedValue(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	a, _ := env.newApp(4, nil)
	s, err := declareShopJoin(a, 4)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.processProfiles(a); err != nil {
		t.Fatal(err)
	}
	type seen struct {
		id   int
		rate int
		ok   bool
	}
	got := make(chan seen, 100)
	err = app.Process(a, s.purchases, "enrich", func(ctx context.Context, events *stream.Events[purchase]) error {
		for es := range events.Batches(50, 20*time.Millisecond) {
			values, ok, err := s.join.GetBatch(ctx, es)
			if err != nil {
				return err
			}
			for i, e := range es {
				one, oneOK, err := s.join.Get(ctx, e) // the single read agrees
				if err != nil {
					return err
				}
				if oneOK != ok[i] || one != values[i] {
					return fmt.Errorf("purchase %d: Get %v %v, GetBatch %v %v", e.Record.ID, one, oneOK, values[i], ok[i])
				}
				byKey, keyOK, err := s.join.In(events).Get(ctx, e.Record.Customer) // and the read by key
				if err != nil {
					return err
				}
				if keyOK != ok[i] || byKey != values[i] {
					return fmt.Errorf("purchase %d: In.Get %v %v, GetBatch %v %v", e.Record.ID, byKey, keyOK, values[i], ok[i])
				}
				if _, _, err := s.join.In(events).Get(ctx, otherPartition(s.customers, e.Partition)); !errors.Is(err, stream.ErrOtherPartition) {
					return fmt.Errorf("a key of another partition: %v, want ErrOtherPartition", err)
				}
				got <- seen{e.Record.ID, values[i].Rate, ok[i]}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	startWorker(t, a)
	ids := customerIDs(t, s.customers, 8)
	want := map[string]customer{}
	var cs []customer
	for i, id := range ids {
		c := customer{ID: id, Name: "name " + id, Rate: i + 1}
		cs, want[id] = append(cs, c), c
	}
	sendCustomers(t, s.customers, cs)
	waitProfiles(t, s.profiles, want)

	var ps []purchase
	for i, id := range ids {
		ps = append(ps, purchase{ID: i, Customer: id, Cents: 1})
	}
	ps = append(ps, purchase{ID: 1000, Customer: "nobody", Cents: 1})
	if _, err := s.purchases.SendMany(context.Background(), ps); err != nil {
		t.Fatal(err)
	}
	check := func(n int, rate func(id int) (int, bool)) {
		t.Helper()
		for range n {
			select {
			case g := <-got:
				r, ok := rate(g.id)
				if g.ok != ok || g.rate != r {
					t.Errorf("purchase %d joined with rate %d (found %v), want %d (%v)", g.id, g.rate, g.ok, r, ok)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("purchases not processed")
			}
		}
	}
	check(len(ps), func(id int) (int, bool) {
		if id == 1000 {
			return 0, false
		}
		return id + 1, true
	})

	// New rates, committed before the next purchases: the join sees them.
	cs = cs[:0]
	for i, id := range ids {
		c := customer{ID: id, Name: "name " + id, Rate: 100 + i}
		cs, want[id] = append(cs, c), c
	}
	sendCustomers(t, s.customers, cs)
	waitProfiles(t, s.profiles, want)
	if _, err := s.purchases.SendMany(context.Background(), ps[:len(ids)]); err != nil {
		t.Fatal(err)
	}
	check(len(ids), func(id int) (int, bool) { return 100 + id, true })
}

// The outputs of a joining processor written to its table stay exact when
// its worker is killed in the middle of batches: each customer's total of
// purchases x the joined rate equals the expected sum, though some batches
// were processed twice.
func TestJoinOutputsExactThroughKill(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test")
	}
	t.Parallel()
	env := newEnv(t)
	a, _ := env.newApp(4, nil)
	s, err := declareShopJoin(a, 4)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.processProfiles(a); err != nil {
		t.Fatal(err)
	}
	startWorker(t, a)
	ids := customerIDs(t, s.customers, 12)
	rates, want := map[string]int{}, map[string]customer{}
	var cs []customer
	for i, id := range ids {
		c := customer{ID: id, Rate: i%5 + 1}
		cs, want[id], rates[id] = append(cs, c), c, c.Rate
	}
	sendCustomers(t, s.customers, cs)
	waitProfiles(t, s.profiles, want)

	const n = 4000
	ps := make([]purchase, n)
	sums := map[string]int{}
	for i := range ps {
		id := ids[i%len(ids)]
		ps[i] = purchase{ID: i, Customer: id, Cents: i%7 + 1}
		sums[id] += ps[i].Cents * rates[id]
	}
	if _, err := s.purchases.SendMany(context.Background(), ps); err != nil {
		t.Fatal(err)
	}
	start := func(id string) *proc {
		return spawn(t, env, id, joinModeEnv+"=1", "LEAT_TEST_REDIS_URL_W="+redistest.URL(t),
			"LEAT_TEST_PARTITIONS=4", "LEAT_TEST_DELAY=20ms")
	}
	joined := func() int {
		n, _ := strconv.Atoi(env.client.Get(context.Background(), joinedKey(env.prefix)).Val())
		return n
	}
	w1, w2 := start("w1"), start("w2")
	redistest.Eventually(t, 20*time.Second, "purchases joined", func() bool { return joined() > n/4 })
	w1.signal(t, syscall.SIGKILL) // between a batch's writes and their commit, most likely
	_ = w1.cmd.Wait()
	redistest.Eventually(t, 20*time.Second, "more purchases joined", func() bool { return joined() > n/2 })
	w2.signal(t, syscall.SIGKILL)
	_ = w2.cmd.Wait()
	w3 := start("w3")
	redistest.Eventually(t, 60*time.Second, "every total", func() bool {
		for id, sum := range sums {
			got, _, err := s.totals.Get(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			if got != sum {
				return false
			}
		}
		return true
	})
	w3.stop(t)
	// And they stay so: nothing was applied twice after they matched.
	for id, sum := range sums {
		if got, _, _ := s.totals.Get(context.Background(), id); got != sum {
			t.Errorf("customer %s: total %d, want %d", id, got, sum)
		}
	}
	if joined() <= n {
		t.Errorf("no purchase was processed twice (%d processings): the kills landed between batches, testing nothing", joined())
	}
	t.Logf("%d purchases, %d processings", n, joined())
}

// runGlobal runs g until the test ends, and fails the test if Run fails.
func runGlobal[V any](t *testing.T, g *stream.Global[V]) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("global table: %v", err)
		}
	})
}

// checkGlobal checks that g holds exactly want (a customer with Gone:
// none) once ready.
func checkGlobal(t *testing.T, g *stream.Global[customer], want map[string]customer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := g.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	held := 0
	for id, w := range want {
		got, ok, err := g.Get(id)
		if err != nil {
			t.Fatal(err)
		}
		if ok == w.Gone || (ok && got != w) {
			t.Errorf("global table: %s = %+v (%v), want %+v", id, got, ok, w)
		}
		if !w.Gone {
			held++
		}
	}
	if g.Len() != held {
		t.Errorf("global table holds %d keys, want %d", g.Len(), held)
	}
}

// A global table, attached to the worker, loads what the table held before
// it started, then follows sets and deletes on every partition; Ready
// waits for what was committed before it.
func TestGlobalTableFollowsAllPartitions(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	a, _ := env.newApp(4, nil)
	s, err := declareShopJoin(a, 4)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.processProfiles(a); err != nil {
		t.Fatal(err)
	}
	writer := startWorker(t, a)
	ids := customerIDs(t, s.customers, 20)
	want := map[string]customer{}
	var cs []customer
	for i, id := range ids[:10] {
		c := customer{ID: id, Name: "first", Rate: i}
		cs, want[id] = append(cs, c), c
	}
	sendCustomers(t, s.customers, cs)
	waitProfiles(t, s.profiles, want)
	if err := writer.stop(t); err != nil {
		t.Fatal(err)
	}

	// A new worker, with the global table as a service.
	b, _ := env.newApp(4, nil)
	sb, err := declareShopJoin(b, 4)
	if err != nil {
		t.Fatal(err)
	}
	if err := sb.processProfiles(b); err != nil {
		t.Fatal(err)
	}
	g, err := stream.GlobalTable(b, sb.profiles)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := g.Get(ids[0]); !errors.Is(err, stream.ErrNotReady) {
		t.Errorf("Get before the load: %v, want ErrNotReady", err)
	}
	if err := b.Attach(g); err != nil {
		t.Fatal(err)
	}
	startWorker(t, b)
	checkGlobal(t, g, want) // loaded

	cs = cs[:0]
	for i, id := range ids {
		c := customer{ID: id, Name: "second", Rate: 100 + i}
		if i%3 == 0 {
			c = customer{ID: id, Gone: true}
		}
		cs, want[id] = append(cs, c), c
	}
	sendCustomers(t, sb.customers, cs)
	waitProfiles(t, sb.profiles, want)
	checkGlobal(t, g, want) // followed
	parts := map[int]bool{}
	for id, c := range want {
		if !c.Gone {
			p, _ := sb.customers.Partition(c)
			parts[p] = true
			_ = id
		}
	}
	if len(parts) != 4 {
		t.Fatalf("the test's customers cover %d partitions, want 4", len(parts))
	}
}

// A global table keeps following across restarts of the table's writer
// (the processor's workers), and converges to the table when it missed
// entries: after the table's values and change log were deleted (as leat
// reset --tables clear does), and after an entry that does not follow the
// one it read last (entries it never saw), it loads the partition again.
func TestGlobalTableConvergesAfterWriterRestart(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	a, _ := env.newApp(4, nil)
	s, err := declareShopJoin(a, 4)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.processProfiles(a); err != nil {
		t.Fatal(err)
	}
	g, err := stream.GlobalTable(a, s.profiles)
	if err != nil {
		t.Fatal(err)
	}
	runGlobal(t, g)
	ids := customerIDs(t, s.customers, 8)
	want := map[string]customer{}
	update := func(name string) {
		t.Helper()
		var cs []customer
		for i, id := range ids {
			c := customer{ID: id, Name: name, Rate: i}
			cs, want[id] = append(cs, c), c
		}
		sendCustomers(t, s.customers, cs)
		waitProfiles(t, s.profiles, want)
	}
	for round := range 3 {
		w := startWorker(t, a)
		update("round " + strconv.Itoa(round))
		checkGlobal(t, g, want)
		if err := w.stop(t); err != nil {
			t.Fatal(err)
		}
	}

	// The table and its logs deleted, then written again: the global
	// table forgets what the table lost.
	var keys []string
	k := rdb.NewKeySpace(env.prefix, "shop")
	for p := range 4 {
		keys = append(keys, k.Table("customers", "profiles", "customers", p), k.TableChanges("customers", "profiles", "customers", p))
	}
	if err := env.client.Del(context.Background(), keys...).Err(); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids[1:] {
		want[id] = customer{ID: id, Gone: true}
	}
	w := startWorker(t, a)
	sendCustomers(t, s.customers, []customer{{ID: ids[0], Name: "after reset"}})
	want[ids[0]] = customer{ID: ids[0], Name: "after reset"}
	waitProfiles(t, s.profiles, want)
	checkGlobal(t, g, want)
	if err := w.stop(t); err != nil {
		t.Fatal(err)
	}

	// An entry that names another entry before it than the last one read
	// (here forged, naming a value the table does not hold): the partition
	// is loaded again from the table, and the forged value is not taken.
	p, _ := s.customers.Partition(customer{ID: ids[0]})
	log := k.TableChanges("customers", "profiles", "customers", p)
	forged := rdb.EncodeChanges([]rdb.Change{{Key: ids[0], Value: []byte{0xc0}}, {Key: "ghost", Delete: true}})
	if err := env.client.XAdd(context.Background(), &redis.XAddArgs{Stream: log, Values: map[string]any{"prev": "1-1", "c": forged}}).Err(); err != nil {
		t.Fatal(err)
	}
	checkGlobal(t, g, want)
}

// A global table bigger than its bound fails with ErrGlobalTooLarge,
// from Run, Ready and Get.
func TestGlobalTableRefusesBeyondBounds(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	a, _ := env.newApp(4, nil)
	s, err := declareShopJoin(a, 4)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.processProfiles(a); err != nil {
		t.Fatal(err)
	}
	g, err := stream.GlobalTable(a, s.profiles, stream.GlobalMaxKeys(5))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- g.Run(ctx) }()
	readyCtx, stop := context.WithTimeout(ctx, 20*time.Second)
	defer stop()
	if err := g.Ready(readyCtx); err != nil {
		t.Fatal(err)
	}
	startWorker(t, a)
	ids := customerIDs(t, s.customers, 6)
	var cs []customer
	for _, id := range ids {
		cs = append(cs, customer{ID: id, Name: "x"})
	}
	sendCustomers(t, s.customers, cs)
	select {
	case err := <-done:
		if !errors.Is(err, stream.ErrGlobalTooLarge) {
			t.Fatalf("Run: %v, want ErrGlobalTooLarge", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the global table went past its bound without failing")
	}
	if _, _, err := g.Get(ids[0]); !errors.Is(err, stream.ErrGlobalTooLarge) {
		t.Errorf("Get: %v, want ErrGlobalTooLarge", err)
	}
	if err := g.Ready(ctx); !errors.Is(err, stream.ErrGlobalTooLarge) {
		t.Errorf("Ready: %v, want ErrGlobalTooLarge", err)
	}
}

// On Redis Cluster the change logs, tables and locks of a partition share
// its slot, so the commit appends to the log on one master; a global table
// polls the logs, one pipelined read per partition; a join reads a batch's
// keys from one slot.
func TestJoinAndGlobalTableOnCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	t.Parallel()
	cl := redistest.StartCluster(t, 3)
	c := cl.Client(t)
	a, err := app.New(app.Config{Name: "shop", Client: c, Logger: testLogger(), Processing: fastOptions(), LeaderLease: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	s, err := declareShopJoin(a, 4)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.processProfiles(a); err != nil {
		t.Fatal(err)
	}
	if err := s.processEnrich(a, 20, nil); err != nil {
		t.Fatal(err)
	}
	g, err := stream.GlobalTable(a, s.profiles)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Attach(g); err != nil {
		t.Fatal(err)
	}
	startWorker(t, a)
	ids := customerIDs(t, s.customers, 8)
	want := map[string]customer{}
	var cs []customer
	for i, id := range ids {
		c := customer{ID: id, Name: "n", Rate: i + 1}
		cs, want[id] = append(cs, c), c
	}
	sendCustomers(t, s.customers, cs)
	waitProfiles(t, s.profiles, want)
	checkGlobal(t, g, want)

	sums := map[string]int{}
	var ps []purchase
	for i := range 200 {
		id := ids[i%len(ids)]
		ps = append(ps, purchase{ID: i, Customer: id, Cents: i%3 + 1})
		sums[id] += (i%3 + 1) * want[id].Rate
	}
	if _, err := s.purchases.SendMany(context.Background(), ps); err != nil {
		t.Fatal(err)
	}
	redistest.Eventually(t, 30*time.Second, "every total", func() bool {
		for id, sum := range sums {
			if got, _, err := s.totals.Get(context.Background(), id); err != nil || got != sum {
				return false
			}
		}
		return true
	})
}

// A global table of a table its processor's workers declare without a
// change log (their definition in the registry says so) fails to run with
// ErrNoChangeLog, rather than never changing.
func TestGlobalTableRefusesWritersWithoutChangeLog(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	a, _ := env.newApp(4, nil)
	customers, err := stream.Declare[customer](a, "customers", stream.KeyField("id"), stream.Partitions(4))
	if err != nil {
		t.Fatal(err)
	}
	plain, err := stream.DeclareTable[customer](customers, "profiles", "customers")
	if err != nil {
		t.Fatal(err)
	}
	err = app.Process(a, customers, "profiles", func(ctx context.Context, events *stream.Events[customer]) error {
		st := plain.In(events)
		for e := range events.All() {
			if err := st.Set(e.Record.ID, e.Record); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	w := startWorker(t, a) // records the processor
	redistest.Eventually(t, 20*time.Second, "the processor recorded", func() bool {
		_, ok, err := rdb.ProcessorDefinition(context.Background(), env.client, rdb.NewKeySpace(env.prefix, "shop"), "customers/profiles")
		return err == nil && ok
	})
	if err := w.stop(t); err != nil {
		t.Fatal(err)
	}
	b, _ := env.newApp(4, nil)
	s, err := declareShopJoin(b, 4) // declares it with KeepChanges
	if err != nil {
		t.Fatal(err)
	}
	g, err := stream.GlobalTable(b, s.profiles)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := g.Run(ctx); !errors.Is(err, stream.ErrNoChangeLog) || !strings.Contains(err.Error(), "customers/profiles") {
		t.Fatalf("Run: %v, want ErrNoChangeLog naming the processor", err)
	}
}
