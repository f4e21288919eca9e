package stream

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leatdev/leat/internal/core"
	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/redis/go-redis/v9"
)

// privateCatalog returns a catalog on a redis-server of the test's own
// (its pauses are the test's alone), through a client whose round trips
// are counted.
func privateCatalog(t *testing.T, d core.Defaults) (*Catalog, *redis.Client, *redistest.RoundTrips) {
	t.Helper()
	c := redistest.Start(t).Client(t)
	rt := &redistest.RoundTrips{}
	c.AddHook(rt)
	return NewCatalog(c, rdb.NewKeySpace("join", "shop"), d), c, rt
}

// Sends made at once from many goroutines share round trips, each gets its
// own entries' IDs, and each goroutine's entries keep its order in their
// partitions.
func TestConcurrentSendsShareRoundTrips(t *testing.T) {
	t.Parallel()
	cat, c, rt := privateCatalog(t, core.Defaults{})
	ctx := ctxT(t)
	orders, err := Declare[order](cat, "orders", KeyField("customer"), Partitions(4))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := orders.Send(ctx, order{ID: -1, Customer: "warm-up"}); err != nil { // registered
		t.Fatal(err)
	}
	const goroutines, each = 32, 50
	before := rt.N()
	ids := make([][]string, goroutines)
	errs := make(chan error, goroutines)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				got, err := orders.Send(ctx, order{ID: int64(g*each + i), Customer: fmt.Sprintf("c%d", g)})
				if err != nil || len(got) != 1 || got[0] == "" {
					errs <- fmt.Errorf("send %d of goroutine %d: %v %v", i, g, got, err)
					return
				}
				ids[g] = append(ids[g], got[0])
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	trips := rt.N() - before
	if trips >= goroutines*each {
		t.Errorf("%d round trips for %d sends from %d goroutines: none shared", trips, goroutines*each, goroutines)
	}
	t.Logf("%d sends from %d goroutines in %d round trips", goroutines*each, goroutines, trips)
	byID := map[string]order{} // by partition and entry ID (IDs are a partition's)
	last := map[string]int64{}
	for p := range 4 {
		for _, s := range partitionEntries(t, c, orders, p) {
			o := s.Record
			byID[fmt.Sprint(p, "/", s.Entry.ID)] = o
			if prev, ok := last[o.Customer]; ok && o.ID <= prev {
				t.Fatalf("partition %d: %s's record %d after %d", p, o.Customer, o.ID, prev)
			}
			last[o.Customer] = o.ID
		}
	}
	for g := range goroutines {
		p := mustPartition(t, orders, fmt.Sprintf("c%d", g))
		for i, id := range ids[g] {
			if o, ok := byID[fmt.Sprint(p, "/", id)]; !ok || o.ID != int64(g*each+i) {
				t.Fatalf("send %d of goroutine %d answered %s, which holds %+v (found %v)", i, g, id, o, ok)
			}
		}
	}
}

// A send that waits for a round (both round trips of joining sends under
// way, held up by CLIENT PAUSE) and whose context ends leaves unsent; the
// sends that wait on go in one round once the server answers, and an entry
// that fails for good there (its partition's key holds a string) fails its
// own send only, whether the round is one pipeline or several (SendBatch
// 1: the later ones are still sent).
func TestJoinedSendsFailAlone(t *testing.T) {
	t.Parallel()
	for _, batch := range []int{0, 1} {
		t.Run(fmt.Sprintf("batch=%d", batch), func(t *testing.T) {
			t.Parallel()
			joinedSendsFailAlone(t, core.Defaults{SendBatch: batch})
		})
	}
}

func joinedSendsFailAlone(t *testing.T, d core.Defaults) {
	cat, c, _ := privateCatalog(t, d)
	ctx := ctxT(t)
	orders, err := Declare[order](cat, "orders", KeyField("customer"), Partitions(16))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := orders.Send(ctx, order{ID: -1, Customer: "warm-up"}); err != nil { // registered
		t.Fatal(err)
	}
	// Two customers on different partitions; the first one's partition
	// key is made a string, so that an XADD to it fails for good.
	bad, good := "", ""
	for i := 0; bad == "" || good == ""; i++ {
		name := fmt.Sprintf("c%d", i)
		p, _ := orders.Partition(order{Customer: name})
		switch {
		case bad == "":
			bad = name
			if err := c.Set(ctx, orders.t.Core.PartitionKey(p), "not a stream", 0).Err(); err != nil {
				t.Fatal(err)
			}
		case p != mustPartition(t, orders, bad):
			good = name
		}
	}
	if err := c.Do(ctx, "CLIENT", "PAUSE", 20000, "WRITE").Err(); err != nil {
		t.Fatal(err)
	}
	type result struct {
		ids []string
		err error
	}
	send := func(ctx context.Context, o order) chan result {
		ch := make(chan result, 1)
		go func() {
			ids, err := orders.Send(ctx, o)
			ch <- result{ids, err}
		}()
		return ch
	}
	first := send(ctx, order{ID: 1, Customer: good})
	redistest.Eventually(t, 10*time.Second, "the first send held up by the pause", func() bool { return redistest.Blocked(t, c, "xadd") == 1 })
	second := send(ctx, order{ID: 2, Customer: good})
	redistest.Eventually(t, 10*time.Second, "the second send held up too", func() bool { return redistest.Blocked(t, c, "xadd") == 2 })
	waitCtx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if ids, err := orders.Send(waitCtx, order{ID: 3, Customer: good}); !errors.Is(err, context.DeadlineExceeded) || len(ids) != 1 || ids[0] != "" {
		t.Fatalf("send that gave up waiting: %v %v, want its context's error, nothing sent", ids, err)
	}
	// The failing entry first in the round: an error that stopped the
	// round there would leave the next send unanswered.
	failing := send(ctx, order{ID: 4, Customer: bad})
	redistest.Eventually(t, 10*time.Second, "a send waiting for a round", func() bool { return orders.t.Core.JoinWaiting() == 1 })
	joined := send(ctx, order{ID: 5, Customer: good})
	redistest.Eventually(t, 10*time.Second, "two sends waiting for a round", func() bool { return orders.t.Core.JoinWaiting() == 2 })
	if err := c.Do(ctx, "CLIENT", "UNPAUSE").Err(); err != nil {
		t.Fatal(err)
	}
	for name, ch := range map[string]chan result{"first": first, "second": second, "joined": joined} {
		if r := <-ch; r.err != nil || len(r.ids) != 1 || r.ids[0] == "" {
			t.Fatalf("%s send: %v %v", name, r.ids, r.err)
		}
	}
	if r := <-failing; r.err == nil || !strings.Contains(r.err.Error(), "WRONGTYPE") || r.ids[0] != "" {
		t.Fatalf("send to a partition whose key is not a stream: %v %v, want WRONGTYPE", r.ids, r.err)
	}
	var sent []int64
	for _, s := range partitionEntries(t, c, orders, mustPartition(t, orders, good)) {
		sent = append(sent, s.Record.ID)
	}
	if fmt.Sprint(sent) != "[1 2 5]" && fmt.Sprint(sent) != "[2 1 5]" {
		t.Fatalf("records on the good partition: %v, want 1 and 2 (either order), then 5; never 3", sent)
	}
}

func mustPartition(t *testing.T, s *Stream[order], customer string) int {
	t.Helper()
	p, err := s.Partition(order{Customer: customer})
	if err != nil {
		t.Fatal(err)
	}
	return p
}
